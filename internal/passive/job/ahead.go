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
	return eachAhead(s.RecordSpill.EachTCP, fn)
}

func (s aheadSpill) EachQUIC(fn func(*model.QUICConn) error) error {
	return eachAhead(s.RecordSpill.EachQUIC, fn)
}

const (
	aheadChunk  = 256 // records handed over at a time
	aheadChunks = 4   // in flight: the memory ahead is bounded
)

var errStopped = errors.New("stopped")

// eachAhead calls fn with every record each gives, in order, each
// running in a goroutine of its own; fn's first error stops both.
func eachAhead[T any](each func(func(*T) error) error, fn func(*T) error) error {
	chunks := make(chan []*T, aheadChunks)
	stop := make(chan struct{})
	var readErr error
	go func() {
		defer close(chunks)
		chunk := make([]*T, 0, aheadChunk)
		send := func() error {
			select {
			case chunks <- chunk:
				chunk = make([]*T, 0, aheadChunk)
				return nil
			case <-stop:
				return errStopped
			}
		}
		err := each(func(r *T) error {
			chunk = append(chunk, r)
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
		for _, r := range chunk {
			if err != nil {
				break
			}
			if err = fn(r); err != nil {
				close(stop)
			}
		}
	}
	// chunks is closed: readErr is the reader's last word.
	if err != nil {
		return err
	}
	return readErr
}
