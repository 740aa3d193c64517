package rtcquality

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/sonde-project/sonde/internal/metrics"
	"github.com/sonde-project/sonde/internal/model"
)

// Test messages on the data channel (docs/browser.md):
//
//	offset 0  u8   magic 'S'
//	offset 1  u8   phase (1 upload, 2 download, 3 acknowledgement)
//	offset 2  u16  reserved, 0
//	offset 4  u32  sequence number, from 0, little-endian (in an
//	               acknowledgement: one more than the highest received)
//	offset 8  f64  send time, ms on the sender's clock, little-endian
//	offset 16 ...  padding to the message size
const (
	msgMagic    = 'S'
	headerLen   = 16
	recordLen   = 20 // u32 seq, f64 send ms, f64 receive ms
	phaseUp     = 1
	phaseDown   = 2
	phaseAck    = 3 // the page's acknowledgement of the download
	dirUpload   = "upload"
	dirDownload = "download"
	// maxSent bounds the sequence numbers one direction may use: 16 M
	// messages is 30 s at 5 Gbit/s of 1100-byte messages.
	maxSent = 1 << 24
)

// Record is one arrival: the message's sequence number and send time (the
// sender's clock) and its arrival time (the receiver's clock), in ms.
type Record struct {
	Seq    uint32
	SendMs float64
	RecvMs float64
}

// putHeader writes a test message header into b (len(b) ≥ headerLen).
func putHeader(b []byte, phase byte, seq uint32, sendMs float64) {
	b[0], b[1], b[2], b[3] = msgMagic, phase, 0, 0
	binary.LittleEndian.PutUint32(b[4:], seq)
	binary.LittleEndian.PutUint64(b[8:], math.Float64bits(sendMs))
}

// parseHeader reads a test message of the given phase; false if b is not
// one.
func parseHeader(b []byte, phase byte) (seq uint32, sendMs float64, ok bool) {
	if len(b) < headerLen || b[0] != msgMagic || b[1] != phase {
		return 0, 0, false
	}
	sendMs = math.Float64frombits(binary.LittleEndian.Uint64(b[8:]))
	if math.IsNaN(sendMs) || math.IsInf(sendMs, 0) {
		return 0, 0, false
	}
	return binary.LittleEndian.Uint32(b[4:]), sendMs, true
}

// DecodeRecords reads the page's arrival records (recordLen bytes each,
// little-endian u32 seq, f64 send ms, f64 receive ms), refusing more than
// max or a body that is not whole records.
func DecodeRecords(b []byte, max int) ([]Record, error) {
	if len(b)%recordLen != 0 {
		return nil, fmt.Errorf("records: %d bytes is not a whole number of %d-byte records", len(b), recordLen)
	}
	n := len(b) / recordLen
	if n > max {
		return nil, fmt.Errorf("records: %d records, at most %d allowed", n, max)
	}
	out := make([]Record, n)
	for i := range out {
		r := b[i*recordLen:]
		out[i] = Record{
			Seq:    binary.LittleEndian.Uint32(r),
			SendMs: math.Float64frombits(binary.LittleEndian.Uint64(r[4:])),
			RecvMs: math.Float64frombits(binary.LittleEndian.Uint64(r[12:])),
		}
		if !finite(out[i].SendMs) || !finite(out[i].RecvMs) {
			return nil, errors.New("records: a time is not a finite number")
		}
	}
	return out, nil
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// Analyze computes one direction's figures from its arrival records (in
// arrival order) with the metrics package, as `sonde udp` does: loss and
// RFC 3357 patterns over sequence numbers 0..sent−1, RFC 3550 jitter in
// arrival order, RFC 4737 reordering. sent < 0 means the sender's count is
// unknown (the highest sequence number + 1 is used); size is the message
// size; sendS the sender's sending time.
func Analyze(dir string, recs []Record, sent, size int, sendS float64) model.WebRTCDirection {
	d := model.WebRTCDirection{Direction: dir, Sent: sent, SentKnown: sent >= 0}
	if sent < 0 {
		sent = 0
		for _, r := range recs {
			sent = max(sent, int(r.Seq)+1)
		}
	}
	// Bound the per-sequence-number arrays whatever the peer claims.
	sent = min(sent, maxSent)
	d.Sent = sent
	seen := make([]bool, sent)
	arrivals := make([]uint64, 0, len(recs))
	var sendT, recvT []float64
	for _, r := range recs {
		if int64(r.Seq) >= int64(sent) {
			// Beyond what the sender says it sent: not a message of this
			// run (a sender cannot lie it into the loss figures).
			d.Malformed++
			continue
		}
		arrivals = append(arrivals, uint64(r.Seq))
		if seen[r.Seq] {
			continue
		}
		seen[r.Seq] = true
		sendT = append(sendT, r.SendMs)
		recvT = append(recvT, r.RecvMs)
	}
	re, dups := metrics.ReorderingOf(arrivals)
	d.Reordering, d.Duplicates = re, dups
	d.Received = len(recvT)
	d.Lost = sent - d.Received
	lost := make([]bool, sent)
	for i, ok := range seen {
		lost[i] = !ok
	}
	d.LossPattern = metrics.LossPatternOf(lost, 1)
	if sent > 0 {
		d.LossPct = 100 * float64(d.Lost) / float64(sent)
	}
	d.JitterMs = metrics.Jitter3550(sendT, recvT)
	if sendS > 0 {
		d.SendRateBps = float64(sent) * float64(size) * 8 / sendS
	}
	if n := len(recvT); n >= 2 {
		lo, hi := recvT[0], recvT[0]
		for _, t := range recvT {
			lo, hi = min(lo, t), max(hi, t)
		}
		if span := (hi - lo) / 1000; span > 0 {
			d.DurationS = span
			// n−1 messages arrived after the first one, over the span.
			d.GoodputBps = float64(n-1) * float64(size) * 8 / span
			d.MessagesPerS = float64(n-1) / span
		}
	}
	return d
}
