package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"time"

	"github.com/sonde-project/sonde/internal/emulator"
	"github.com/sonde-project/sonde/internal/emulator/forward"
	"github.com/sonde-project/sonde/internal/netns"
)

// Emulation is one emulated link between two existing network namespaces
// (`sonde emulate`): a TUN device in each, addressed, and the link model
// forwarding between them.
type Emulation struct {
	NSA, NSB     string       // the namespaces of ends A (client side) and B
	DevA, DevB   string       // TUN device names ("": unique sonde names)
	AddrA, AddrB netip.Prefix // the ends' addresses (198.18.0.0/15)
	MTU          int          // of the TUN devices
	Up, Down     emulator.Config
	Seed         uint64 // 0: random (RandomSeed)
	TruthPath    string // per-packet ground truth ("": none)
	PcapPath     string // a pcapng of both ends ("": none)
	ICMPFrom     netip.Addr
	// Stats is the interval of live counters (0: only at the end),
	// Duration how long to run (0: until ctx ends), Spin the busy-wait
	// before each deadline (0: none).
	Stats, Duration, Spin  time.Duration
	RealTime, AllowCPUIdle bool
}

// Emulate runs e until ctx ends or its Duration has passed: it prints the
// link's description to out, calls stats(up, down) every Stats and once at
// the end, and removes the devices it made.
func Emulate(ctx context.Context, out io.Writer, e Emulation, stats func(up, down forward.Stats)) (err error) {
	benchRange := netip.MustParsePrefix("198.18.0.0/15")
	if !benchRange.Contains(e.AddrA.Addr()) || !benchRange.Contains(e.AddrB.Addr()) {
		return errors.New("emulate: addresses must be in 198.18.0.0/15 (RFC 2544 benchmarking range)")
	}
	spin := e.Spin
	if spin == 0 {
		spin = -1 // the forwarder's "none"; its 0 is the default
	}
	if os.Geteuid() != 0 {
		return errors.New("emulate: TUN devices and network namespaces need root (CAP_NET_ADMIN)")
	}
	nsA, err := netns.Attach(e.NSA)
	if err != nil {
		return fmt.Errorf("emulate: %w", err)
	}
	nsB, err := netns.Attach(e.NSB)
	if err != nil {
		return fmt.Errorf("emulate: %w", err)
	}
	seed := e.Seed
	if seed == 0 {
		seed = RandomSeed()
	}
	var closers []func() error
	defer func() {
		for i := len(closers) - 1; i >= 0; i-- {
			err = errors.Join(err, closers[i]())
		}
	}()
	lk, err := CreateEmuLink(
		LinkEnd{NS: nsA, Dev: orUnique(e.DevA, "ea"), Addr: e.AddrA},
		LinkEnd{NS: nsB, Dev: orUnique(e.DevB, "eb"), Addr: e.AddrB}, e.MTU)
	closers = append(closers, lk.Close)
	if err != nil {
		return fmt.Errorf("emulate: %w", err)
	}
	start := time.Now()
	var truth *emulator.TruthWriter
	if e.TruthPath != "" {
		file, err := os.Create(e.TruthPath)
		if err != nil {
			return fmt.Errorf("emulate: %w", err)
		}
		truth, err = emulator.NewTruthWriter(file, emulator.TruthHeader{
			StartUnixNs: start.UnixNano(), Seed: seed,
			Links: []emulator.TruthLink{{Name: "link1", A: e.NSA, B: e.NSB, Up: e.Up.Params, Down: e.Down.Params,
				UpSchedule: e.Up.Schedule, DownSchedule: e.Down.Schedule}},
		})
		if err != nil {
			file.Close()
			return fmt.Errorf("emulate: %w", err)
		}
		closers = append(closers, truth.Close)
	}
	if err := lk.Start(StartConfig{
		Up: e.Up, Down: e.Down, Seed: seed, MTU: e.MTU, Start: start, Truth: truth,
		CapturePath: e.PcapPath, LabelA: e.NSA, LabelB: e.NSB, ICMPFrom4: e.ICMPFrom,
		Spin: spin, RealTime: e.RealTime, AllowCPUIdle: e.AllowCPUIdle,
	}); err != nil {
		return fmt.Errorf("emulate: %w", err)
	}
	fmt.Fprintf(out, "emulating %s (%s, %s) ⇄ %s (%s, %s), seed %d\n  up:   %s\n  down: %s\n",
		e.NSA, lk.A.Name(), e.AddrA, e.NSB, lk.B.Name(), e.AddrB, seed, e.Up.Params, e.Down.Params)
	printStats := func() { stats(lk.Stats()) }
	err = Watch(ctx, []*EmuLink{lk}, e.Stats, e.Duration, printStats)
	if err != nil {
		err = fmt.Errorf("emulate: %w", err)
	}
	err = errors.Join(err, lk.Stop())
	printStats()
	return err
}

// orUnique is name, or a unique sonde device name with this tag.
func orUnique(name, tag string) string {
	if name == "" {
		return netns.UniqueName(tag)
	}
	return name
}
