package pcap

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
)

// Writer writes a nanosecond pcap file of one link type.
type Writer struct {
	w    *bufio.Writer
	snap uint32
	rec  [16]byte
}

// NewWriter writes the file header; snap is the largest length a record
// holds (longer packets are cut to it and keep their original length).
func NewWriter(w io.Writer, link LinkType, snap uint32) (*Writer, error) {
	pw := &Writer{w: bufio.NewWriterSize(w, 1<<20), snap: snap}
	var hdr [24]byte
	le := binary.LittleEndian
	le.PutUint32(hdr[0:], 0xa1b23c4d) // nanosecond timestamps
	le.PutUint16(hdr[4:], 2)
	le.PutUint16(hdr[6:], 4)
	le.PutUint32(hdr[16:], snap)
	le.PutUint32(hdr[20:], uint32(link))
	if _, err := pw.w.Write(hdr[:]); err != nil {
		return nil, fmt.Errorf("pcap header: %w", err)
	}
	return pw, nil
}

// Write adds one packet captured at t (Unix ns) whose original length was
// orig bytes (orig < len(data) is taken as len(data)).
func (pw *Writer) Write(t int64, data []byte, orig int) error {
	if uint32(len(data)) > pw.snap {
		data = data[:pw.snap]
	}
	le := binary.LittleEndian
	le.PutUint32(pw.rec[0:], uint32(t/1e9))
	le.PutUint32(pw.rec[4:], uint32(t%1e9))
	le.PutUint32(pw.rec[8:], uint32(len(data)))
	le.PutUint32(pw.rec[12:], uint32(max(orig, len(data))))
	if _, err := pw.w.Write(pw.rec[:]); err != nil {
		return err
	}
	_, err := pw.w.Write(data)
	return err
}

// Flush writes what is buffered.
func (pw *Writer) Flush() error { return pw.w.Flush() }
