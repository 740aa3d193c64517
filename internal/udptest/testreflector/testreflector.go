// Package testreflector provides stand-alone UDP reflectors for sonde's
// interoperability tests: a STAMP reflector (RFC 8762 §4.3.1,
// unauthenticated, with the RFC 8972 SSID echoed), a TWAMP-Light reflector
// (RFC 5357 §4.2.1, unauthenticated) and one that answers every datagram
// with garbage of a fixed size. They are written from the RFCs' packet
// layouts with hand-written byte offsets and share no code with package
// stamp, so that sonde's sender is checked against other implementations
// rather than against itself. They answer every datagram, as the
// reflectors in routers do: use them on loopback only.
package testreflector

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Kind selects the reflector's packet format.
type Kind int

// Kinds of reflector.
const (
	// STAMP answers with the 44-octet RFC 8762 reflector packet and the
	// probe's TLVs copied after it, as long as the probe.
	STAMP Kind = iota
	// TWAMPLight answers with the 41-octet RFC 5357 reflector packet and
	// padding as Padding says.
	TWAMPLight
	// Garbage answers every datagram with GarbageBytes random octets.
	Garbage
)

// Padding is how much of the probe's padding a TWAMP-Light reflector
// returns. RFC 5357 §4.2.1 makes the reflector packet 27 octets longer
// than a sender packet with the same padding and recommends that the
// reflector drop 27 octets of padding so both are the same size;
// implementations differ.
type Padding int

// Padding modes.
const (
	// PadSameSize drops 27 octets of padding: the reply is as long as
	// the probe (but at least 41 octets).
	PadSameSize Padding = iota
	// PadNone sends the bare 41-octet packet.
	PadNone
	// PadAll returns all of the probe's padding: 27 octets more.
	PadAll
)

// Config configures a reflector.
type Config struct {
	Kind         Kind
	Padding      Padding // TWAMPLight only
	GarbageBytes int     // Garbage only: 1-1500
}

// Reflector is a running test reflector.
type Reflector struct {
	pc       net.PacketConn
	answered atomic.Int64
	wg       sync.WaitGroup
}

// ntpEpoch is 1900-01-01, the NTP era 0 origin, in Unix seconds.
const ntpEpoch = -2208988800

// ntp returns t as a 64-bit NTP timestamp.
func ntp(t time.Time) uint64 {
	secs := uint64(t.Unix() - ntpEpoch)
	frac := uint64(t.Nanosecond()) << 32 / 1_000_000_000
	return secs<<32 | frac
}

// Start listens on addr ("127.0.0.1:0") and reflects until Close.
func Start(addr string, cfg Config) (*Reflector, error) {
	if cfg.Kind == Garbage && (cfg.GarbageBytes < 1 || cfg.GarbageBytes > 1500) {
		return nil, fmt.Errorf("testreflector: garbage size %d: want 1-1500", cfg.GarbageBytes)
	}
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("testreflector: listen on %s: %w", addr, err)
	}
	r := &Reflector{pc: pc}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		r.serve(cfg)
	}()
	return r, nil
}

// Addr is the reflector's UDP address.
func (r *Reflector) Addr() string { return r.pc.LocalAddr().String() }

// Answered counts the datagrams sent back.
func (r *Reflector) Answered() int { return int(r.answered.Load()) }

// Close stops the reflector.
func (r *Reflector) Close() error {
	err := r.pc.Close()
	r.wg.Wait()
	return err
}

func (r *Reflector) serve(cfg Config) {
	in := make([]byte, 2048)
	out := make([]byte, 2048+41) // room for a whole probe's padding after 41 octets
	rng := rand.New(rand.NewPCG(1, 2))
	var seq uint32
	for {
		n, from, err := r.pc.ReadFrom(in)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		rx := time.Now()
		var reply []byte
		switch cfg.Kind {
		case STAMP:
			reply = stampReply(out, in[:n], seq, rx)
		case TWAMPLight:
			reply = twampLightReply(out, in[:n], seq, rx, cfg.Padding)
		case Garbage:
			reply = out[:cfg.GarbageBytes]
			for i := range reply {
				reply[i] = byte(rng.Uint32())
			}
		}
		if reply == nil {
			continue
		}
		seq++
		if _, err := r.pc.WriteTo(reply, from); err == nil {
			r.answered.Add(1)
		}
	}
}

// stampReply builds the RFC 8762 §4.3.1 unauthenticated Session-Reflector
// packet:
//
//	0 Sequence Number (4)   4 Timestamp (8)   12 Error Estimate (2)
//	14 SSID (2, RFC 8972; MBZ in RFC 8762)   16 Receive Timestamp (8)
//	24 Session-Sender Sequence Number (4)   28 Session-Sender Timestamp (8)
//	36 Session-Sender Error Estimate (2)   38 MBZ (2)
//	40 Session-Sender TTL (1)   41 MBZ (3)   44 TLVs, copied
//
// Probes shorter than the 44-octet sender packet are not answered.
func stampReply(out, in []byte, seq uint32, rx time.Time) []byte {
	if len(in) < 44 {
		return nil
	}
	b := out[:len(in)]
	clear(b[:44])
	binary.BigEndian.PutUint32(b[0:4], seq)
	binary.BigEndian.PutUint16(b[12:14], 0x8001) // S set, scale 0, multiplier 1
	copy(b[14:16], in[14:16])                    // SSID
	binary.BigEndian.PutUint64(b[16:24], ntp(rx))
	copy(b[24:28], in[0:4])   // sender sequence number
	copy(b[28:36], in[4:12])  // sender timestamp
	copy(b[36:38], in[12:14]) // sender error estimate
	b[40] = 64                // sender TTL: not read from the socket here
	copy(b[44:], in[44:])     // TLVs, flags unchanged (the U flag a sender sets stays)
	binary.BigEndian.PutUint64(b[4:12], ntp(time.Now()))
	return b
}

// twampLightReply builds the RFC 5357 §4.2.1 unauthenticated reflector
// packet:
//
//	0 Sequence Number (4)   4 Timestamp (8)   12 Error Estimate (2)
//	14 MBZ (2)   16 Receive Timestamp (8)   24 Sender Sequence Number (4)
//	28 Sender Timestamp (8)   36 Sender Error Estimate (2)   38 MBZ (2)
//	40 Sender TTL (1)   41 Packet Padding
//
// The sender's packet (RFC 5357 §4.1.2) is Sequence Number (4), Timestamp
// (8), Error Estimate (2) and padding from octet 14: the padding returned
// is the sender's, from its start. Probes shorter than 14 octets are not
// answered.
func twampLightReply(out, in []byte, seq uint32, rx time.Time, pad Padding) []byte {
	if len(in) < 14 {
		return nil
	}
	padding := in[14:]
	switch pad {
	case PadSameSize:
		padding = padding[:max(0, len(padding)-27)]
	case PadNone:
		padding = nil
	}
	b := out[:41+len(padding)]
	clear(b[:41])
	binary.BigEndian.PutUint32(b[0:4], seq)
	binary.BigEndian.PutUint16(b[12:14], 0x8001)
	binary.BigEndian.PutUint64(b[16:24], ntp(rx))
	copy(b[24:28], in[0:4])
	copy(b[28:36], in[4:12])
	copy(b[36:38], in[12:14])
	b[40] = 255 // sender TTL: RFC 5357 asks for the received TTL; not read here
	copy(b[41:], padding)
	binary.BigEndian.PutUint64(b[4:12], ntp(time.Now()))
	return b
}
