//go:build linux

package forward

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// Recorder writes the link's packets to a pcapng file (raw IP link type, nanosecond timestamps)
// with two interfaces: the link's A end (interface 0) and B end
// (interface 1). Each packet is stamped when the emulator read it from, or
// wrote it to, that end, and flagged inbound (entering the node on that
// end) or outbound (leaving it).
type Recorder struct {
	mu  sync.Mutex
	w   *pcapgo.NgWriter
	c   io.Closer
	err error
}

// NewRecorder starts recording on w, naming the interfaces after the
// devices at each end. If w is an io.Closer, Close closes it.
func NewRecorder(w io.Writer, nameA, nameB string) (*Recorder, error) {
	intf := func(name, desc string) pcapgo.NgInterface {
		return pcapgo.NgInterface{Name: name, Description: desc, OS: "linux", LinkType: layers.LinkTypeRaw, TimestampResolution: 9}
	}
	opts := pcapgo.DefaultNgWriterOptions
	opts.SectionInfo.Application = "sonde emulate"
	nw, err := pcapgo.NewNgWriterInterface(w, intf(nameA, "sonde link end A (client side)"), opts)
	if err != nil {
		return nil, fmt.Errorf("pcapng: %w", err)
	}
	if _, err := nw.AddInterface(intf(nameB, "sonde link end B (server side)")); err != nil {
		return nil, fmt.Errorf("pcapng: %w", err)
	}
	c := &Recorder{w: nw}
	if cl, ok := w.(io.Closer); ok {
		c.c = cl
	}
	return c, nil
}

func (c *Recorder) packet(atB, inbound bool, ts time.Time, b []byte) {
	flags := &pcapgo.NgEpbFlags{Direction: pcapgo.NgEpbFlagDirectionOutbound}
	if inbound {
		flags.Direction = pcapgo.NgEpbFlagDirectionInbound
	}
	ci := gopacket.CaptureInfo{Timestamp: ts, CaptureLength: len(b), Length: len(b)}
	if atB {
		ci.InterfaceIndex = 1
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = c.w.WritePacketWithOptions(ci, b, pcapgo.NgPacketOptions{Flags: flags})
	}
}

// Close flushes the capture and closes the file.
func (c *Recorder) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	err := c.err
	if ferr := c.w.Flush(); err == nil {
		err = ferr
	}
	if c.c != nil {
		err = errors.Join(err, c.c.Close())
	}
	return err
}
