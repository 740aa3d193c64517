package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"

	"github.com/sonde-project/sonde/internal/model"
)

// NDJSON writes values one JSON object a line as they come (`sonde analyze
// --ndjson`: a line per finished connection), buffered. The first error
// stops it; Flush and Err report it. WriteJSON is the indented form of one
// saved result; this is the streaming form.
type NDJSON struct {
	bw  *bufio.Writer
	enc *json.Encoder
	n   int
	err error
}

// NewNDJSON returns a writer of lines to w.
func NewNDJSON(w io.Writer) *NDJSON {
	bw := bufio.NewWriterSize(w, 64<<10)
	return &NDJSON{bw: bw, enc: json.NewEncoder(bw)}
}

// Write adds v as one line.
func (nw *NDJSON) Write(v any) {
	if nw.err == nil {
		nw.err = nw.enc.Encode(v)
		nw.n++
	}
}

// Lines is the number of lines written.
func (nw *NDJSON) Lines() int { return nw.n }

// Flush writes what is buffered and returns the first error.
func (nw *NDJSON) Flush() error {
	if nw.err == nil {
		nw.err = nw.bw.Flush()
	}
	return nw.err
}

// WriteAnalysisJSON writes an analysis exactly as WriteJSON would, but
// one record at a time: WriteJSON encodes the whole value in memory
// first, and a long capture's records may not be in memory at all
// (model.Analysis.Spill). The rest of the analysis is encoded as one
// value and the records are written where its "tcp" and "quic" arrays
// belong (after "duration_s", in the model's field order).
func WriteAnalysisJSON(w io.Writer, r *model.Analysis) error {
	rest := *r
	rest.TCP, rest.QUIC, rest.Spill = nil, nil, nil
	b, err := json.MarshalIndent(&rest, "", "  ")
	if err != nil {
		return err
	}
	const anchor = "\n  \"duration_s\": "
	i := bytes.Index(b, []byte(anchor))
	if i < 0 {
		return errors.New("analysis JSON: no duration_s") // the model changed: keep this in step
	}
	at := i + len(anchor) + bytes.IndexByte(b[i+len(anchor):], '\n') + 1
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.Write(b[:at])
	if r.NumTCP() > 0 {
		if err := jsonArray(bw, "tcp", r.EachTCP); err != nil {
			return err
		}
	}
	if r.NumQUIC() > 0 {
		if err := jsonArray(bw, "quic", r.EachQUIC); err != nil {
			return err
		}
	}
	bw.Write(b[at:])
	bw.WriteByte('\n')
	return bw.Flush()
}

// jsonArray writes `  "name": [...],` with each element indented as
// json.MarshalIndent would inside the top-level object.
func jsonArray[T any](w *bufio.Writer, name string, each func(func(*T) error) error) error {
	w.WriteString("  \"" + name + "\": [")
	first := true
	err := each(func(v *T) error {
		b, err := json.MarshalIndent(v, "    ", "  ")
		if err != nil {
			return err
		}
		if !first {
			w.WriteByte(',')
		}
		first = false
		w.WriteString("\n    ")
		_, err = w.Write(b)
		return err
	})
	w.WriteString("\n  ],\n")
	return err
}
