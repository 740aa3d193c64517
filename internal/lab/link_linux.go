//go:build linux

package lab

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"time"

	"github.com/sonde-project/sonde/internal/emulator"
	"github.com/sonde-project/sonde/internal/emulator/forward"
	"github.com/sonde-project/sonde/internal/netns"
	"github.com/sonde-project/sonde/internal/tun"
)

// This file is the one builder of an emulated link between two network
// namespaces, used by the lab (one per hop) and by `sonde emulate`: TUN
// devices, their addresses and queue, the seeds of the two directions, the
// forwarder and the loop that watches it.

// RandomSeed is a random non-zero seed, for a lab or link whose seed was
// not given (it is printed and recorded so the run can be replayed).
func RandomSeed() uint64 {
	var s [8]byte
	_, _ = rand.Read(s[:])
	return binary.LittleEndian.Uint64(s[:]) | 1
}

// LinkSeeds are the seeds of link i's two directions (0-based) for a
// run's seed: links get distinct, reproducible random processes, and the
// two directions of a link do not share one.
func LinkSeeds(seed uint64, i int) (up, down uint64) {
	up = seed + uint64(i)*0x9e3779b97f4a7c15
	return up, up ^ 0xd1b54a32d192ed03
}

// MaxPacket is the largest packet the forwarder must read from a TUN
// device of this MTU: the link's own mtu= setting may be smaller, and the
// margin covers the virtio-net header of the offloads.
func MaxPacket(mtu int) int { return max(mtu, 1500) + 64 }

// LinkEnd is one end of a link: a TUN device made in the host namespace,
// moved into NS and addressed there.
type LinkEnd struct {
	NS   *netns.NS
	Dev  string       // TUN device name (≤ 15 bytes)
	Addr netip.Prefix // the end's address and subnet
	// Label names the end in the pcapng capture ("client", a namespace).
	Label string
	// Routes are further `ip` commands run in NS once the device is up
	// (routes through it); the device name is already in them.
	Routes [][]string
}

// EmuLink is an emulated link: two TUN devices and, once started, the
// forwarder between them.
type EmuLink struct {
	A, B     *tun.Device
	fwd      *forward.Forwarder
	recorder *forward.Recorder
}

// CreateEmuLink makes and configures both ends of a link whose devices have
// this MTU. On error the devices made so far are returned with the link,
// for Close.
func CreateEmuLink(a, b LinkEnd, mtu int) (*EmuLink, error) {
	lk := &EmuLink{}
	for i, e := range []LinkEnd{a, b} {
		d, err := tun.Create(e.Dev)
		if err != nil {
			return lk, err
		}
		if i == 0 {
			lk.A = d
		} else {
			lk.B = d
		}
		if err := e.NS.MoveLink(d.Name()); err != nil {
			return lk, err
		}
		cmds := append([][]string{
			{"addr", "add", e.Addr.String(), "dev", d.Name()},
			// A long device queue: the emulated queue is the model's, the
			// kernel must not drop before the emulator sees a packet.
			{"link", "set", "dev", d.Name(), "mtu", strconv.Itoa(mtu), "txqueuelen", "10000", "up"},
		}, e.Routes...)
		for _, c := range cmds {
			if err := e.NS.IP(c...); err != nil {
				return lk, err
			}
		}
	}
	return lk, nil
}

// StartConfig is how a created link forwards.
type StartConfig struct {
	// Up (A→B) and Down (B→A): parameters and schedules; their seeds are
	// set from Seed and Index (LinkSeeds).
	Up, Down emulator.Config
	Seed     uint64
	Index    int // the link's number from 0 (seeds, ground-truth link id)
	MTU      int // of the devices, for MaxPacket
	Start    time.Time
	Truth    *emulator.TruthWriter
	// CapturePath, if set, receives a pcapng capture of both ends,
	// labelled LabelA and LabelB.
	CapturePath    string
	LabelA, LabelB string
	ICMPFrom4      netip.Addr
	Spin           time.Duration
	RealTime       bool
	AllowCPUIdle   bool
}

// Start opens the capture, if any, and starts forwarding.
func (lk *EmuLink) Start(c StartConfig) error {
	if c.CapturePath != "" {
		f, err := os.Create(c.CapturePath)
		if err != nil {
			return fmt.Errorf("capture: %w", err)
		}
		if lk.recorder, err = forward.NewRecorder(f, c.LabelA+":"+lk.A.Name(), c.LabelB+":"+lk.B.Name()); err != nil {
			f.Close()
			return err
		}
	}
	c.Up.Seed, c.Down.Seed = LinkSeeds(c.Seed, c.Index)
	var err error
	lk.fwd, err = forward.Start(forward.Config{
		A: lk.A, B: lk.B, Up: c.Up, Down: c.Down, Start: c.Start, Truth: c.Truth,
		Link: uint8(c.Index), ICMPFrom4: c.ICMPFrom4, Recorder: lk.recorder, MaxPacket: MaxPacket(c.MTU),
		Spin: c.Spin, RealTime: c.RealTime, AllowCPUIdle: c.AllowCPUIdle,
	})
	return err
}

// Stop stops forwarding (a link never started stops at once).
func (lk *EmuLink) Stop() error {
	if lk.fwd == nil {
		return nil
	}
	return lk.fwd.Stop()
}

// Close closes the devices and the capture; Stop first.
func (lk *EmuLink) Close() error {
	var errs []error
	for _, d := range []*tun.Device{lk.A, lk.B} {
		if d != nil {
			errs = append(errs, d.Close())
		}
	}
	if lk.recorder != nil {
		errs = append(errs, lk.recorder.Close())
	}
	return errors.Join(errs...)
}

// Stats are the live counters of both directions (zero before Start).
func (lk *EmuLink) Stats() (up, down forward.Stats) {
	if lk.fwd == nil {
		return up, down
	}
	return lk.fwd.Stats()
}

// Err reports a forwarder that stopped on its own (a device vanished).
func (lk *EmuLink) Err() error {
	if lk.fwd == nil {
		return nil
	}
	select {
	case <-lk.fwd.Done():
		return fmt.Errorf("forwarder stopped: %w", lk.fwd.Err())
	default:
		return nil
	}
}

// Watch blocks until ctx ends, duration passes (0: no limit) or a link's
// forwarder stops on its own, which it returns as the error. It calls
// report every interval (0: never); the caller shows the final counters.
func Watch(ctx context.Context, links []*EmuLink, interval, duration time.Duration, report func()) error {
	var tick <-chan time.Time
	if interval > 0 {
		t := time.NewTicker(interval)
		defer t.Stop()
		tick = t.C
	}
	var end <-chan time.Time
	if duration > 0 {
		t := time.NewTimer(duration)
		defer t.Stop()
		end = t.C
	}
	// A forwarder stops on its own only when a device fails: checking
	// once a second is soon enough, and one loop serves any number of
	// links.
	check := time.NewTicker(time.Second)
	defer check.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-end:
			return nil
		case <-tick:
			report()
		case <-check.C:
			var errs []error
			for i, lk := range links {
				if err := lk.Err(); err != nil {
					errs = append(errs, fmt.Errorf("link %d: %w", i+1, err))
				}
			}
			if err := errors.Join(errs...); err != nil {
				return err
			}
		}
	}
}
