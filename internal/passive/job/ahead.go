package job

import (
	"errors"

	"github.com/sonde-project/sonde/internal/model"
)

// aheadSpill reads spilled records back (the merge of the spill's runs
// and their decoding) in a goroutine of its own while the outputs
// format the records before them, when the analysis had several
// workers: the end of a run is otherwise one goroutine's (about a tenth
// of two workers' run on the bench capture). The records come in the
// same order.
type aheadSpill struct{ model.RecordSpill }

func (s aheadSpill) EachTCP(fn func(*model.TCPConn) error) error {
	return eachAhead(s.RecordSpill.EachTCP, copyTCP, fn)
}

func (s aheadSpill) EachQUIC(fn func(*model.QUICConn) error) error {
	return eachAhead(s.RecordSpill.EachQUIC, func(dst, src *model.QUICConn) { *dst = *src }, fn)
}

// copyTCP copies src into dst, the goodput series into dst's arrays:
// the spill reuses src's (model.Analysis.EachTCP).
func copyTCP(dst, src *model.TCPConn) {
	ab, ba := dst.AB.GoodputSeries, dst.BA.GoodputSeries
	*dst = *src
	dst.AB.GoodputSeries = copySeries(ab, src.AB.GoodputSeries)
	dst.BA.GoodputSeries = copySeries(ba, src.BA.GoodputSeries)
}

// copySeries copies src into dst's array if it has room; nil and empty
// stay apart.
func copySeries(dst, src []float64) []float64 {
	if src == nil {
		return nil
	}
	if dst == nil {
		dst = make([]float64, 0, len(src))
	}
	return append(dst[:0], src...)
}

const (
	aheadChunk  = 256 // records handed over at a time
	aheadChunks = 4   // in flight: the memory ahead is bounded
)

var errStopped = errors.New("stopped")

// eachAhead calls fn with every record each gives, in order, each
// running in a goroutine of its own; fn's first error stops both. each's
// records are copied (copy) into chunks of values that go back and forth
// between the two: neither keeps a record it was given.
func eachAhead[T any](each func(func(*T) error) error, copy func(dst, src *T), fn func(*T) error) error {
	chunks := make(chan []T, aheadChunks)
	free := make(chan []T, aheadChunks+2)
	stop := make(chan struct{})
	var readErr error
	go func() {
		defer close(chunks)
		chunk := make([]T, 0, aheadChunk)
		send := func() error {
			select {
			case chunks <- chunk:
			case <-stop:
				return errStopped
			}
			select {
			case chunk = <-free:
			default:
				chunk = make([]T, 0, aheadChunk)
			}
			return nil
		}
		err := each(func(r *T) error {
			chunk = chunk[:len(chunk)+1]
			copy(&chunk[len(chunk)-1], r)
			if len(chunk) < aheadChunk {
				return nil
			}
			return send()
		})
		if err != errStopped && len(chunk) > 0 && send() != nil {
			err = errStopped
		}
		readErr = err // the records before a read error go first
	}()
	var err error
	for chunk := range chunks {
		for i := range chunk {
			if err != nil {
				break
			}
			if err = fn(&chunk[i]); err != nil {
				close(stop)
			}
		}
		select {
		case free <- chunk[:0]:
		default:
		}
	}
	// chunks is closed: readErr is the reader's last word.
	if err != nil {
		return err
	}
	return readErr
}
