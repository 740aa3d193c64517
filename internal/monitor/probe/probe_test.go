package probe

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/stamp"
	"github.com/sonde-project/sonde/internal/udptest/testreflector"
)

// run probes for d and returns the samples, the latest sample per (stream,
// seq) (a late sample supersedes the lost one) and the stats.
// Run is run for the external tests against a real server (server_test.go).
var Run = run

func run(t *testing.T, cfg Config, d time.Duration) ([]model.ProbeSample, map[[2]int64]model.ProbeSample, []StreamStats) {
	t.Helper()
	p, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	p.Start()
	time.Sleep(d)
	p.Close()
	all := p.Ring().Drain(nil)
	last := map[[2]int64]model.ProbeSample{}
	for _, s := range all {
		last[[2]int64{int64(s.Stream), int64(s.Seq)}] = s
	}
	return all, last, p.Stats()
}

func lastSent(m map[[2]int64]model.ProbeSample) int64 {
	var t int64
	for _, s := range m {
		t = max(t, s.SentNs)
	}
	return t
}

func TestIndependentReflectors(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  testreflector.Config
		size int
	}{
		{"stamp", testreflector.Config{Kind: testreflector.STAMP}, 0},
		{"twamp-light-same-size", testreflector.Config{Kind: testreflector.TWAMPLight}, 100},
		{"twamp-light-no-padding", testreflector.Config{Kind: testreflector.TWAMPLight, Padding: testreflector.PadNone}, 0},
		{"twamp-light-all-padding", testreflector.Config{Kind: testreflector.TWAMPLight, Padding: testreflector.PadAll}, 80},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := testreflector.Start("127.0.0.1:0", c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			_, last, st := run(t, Config{Streams: []StreamConfig{{Kind: model.ProbeSTAMP, Target: r.Addr(), Rate: 100, PacketBytes: c.size}}}, 600*time.Millisecond)
			if st[0].Sent < 30 || st[0].Answered+2 < st[0].Sent || st[0].Unmatched != 0 {
				t.Fatalf("stats %+v", st[0])
			}
			for _, s := range last {
				if !s.Lost && (s.RTTNs <= 0 || s.RTTNs > int64(100*time.Millisecond)) {
					t.Fatalf("sample %+v", s)
				}
			}
		})
	}
	t.Run("garbage", func(t *testing.T) {
		r, err := testreflector.Start("127.0.0.1:0", testreflector.Config{Kind: testreflector.Garbage, GarbageBytes: 60})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		_, _, st := run(t, Config{Streams: []StreamConfig{{Kind: model.ProbeSTAMP, Target: r.Addr(), Rate: 100, Timeout: 100 * time.Millisecond}}}, 500*time.Millisecond)
		if st[0].Answered != 0 || st[0].Unmatched == 0 || st[0].Lost == 0 {
			t.Fatalf("garbage replies: stats %+v", st[0])
		}
	})
}

// faulty is a STAMP reflector that drops every dropK-th probe, delays
// every delayK-th reply by delay, and after every reply sends two
// replays: the reply of five probes earlier unchanged, and the same with
// its sequence number rewritten to the current probe's.
type faulty struct {
	pc                   *net.UDPConn
	dropK, delayK        uint32
	delay                time.Duration
	wg                   sync.WaitGroup
	replay               bool
	mu                   sync.Mutex
	history              map[uint32][]byte
	dropped, delayedSent int
}

func startFaulty(t *testing.T, f *faulty) string {
	pc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	f.pc, f.history = pc, map[uint32][]byte{}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		in := make([]byte, 2048)
		for {
			n, from, err := pc.ReadFromUDPAddrPort(in)
			if err != nil {
				return
			}
			seq := binary.BigEndian.Uint32(in)
			if f.dropK > 0 && seq%f.dropK == f.dropK-1 {
				f.dropped++
				continue
			}
			out := make([]byte, n)
			stamp.Reflect(out, in[:n], stamp.ReflectInfo{Seq: seq, Receive: stamp.TimestampFromNs(time.Now().UnixNano()), TTL: -1, TOS: -1})
			binary.BigEndian.PutUint64(out[4:], uint64(stamp.TimestampFromNs(time.Now().UnixNano())))
			if f.delayK > 0 && seq%f.delayK == f.delayK-1 {
				f.wg.Add(1)
				time.AfterFunc(f.delay, func() {
					defer f.wg.Done()
					_, _ = pc.WriteToUDPAddrPort(out, from)
				})
				continue
			}
			_, _ = pc.WriteToUDPAddrPort(out, from)
			if f.replay {
				f.history[seq] = out
				if old, ok := f.history[seq-5]; ok {
					_, _ = pc.WriteToUDPAddrPort(old, from)
					forged := append([]byte(nil), old...)
					binary.BigEndian.PutUint32(forged[24:], seq)
					_, _ = pc.WriteToUDPAddrPort(forged, from)
					delete(f.history, seq-5)
				}
			}
		}
	}()
	t.Cleanup(func() { pc.Close(); f.wg.Wait() })
	return pc.LocalAddr().String()
}

func TestLossLateAndReplay(t *testing.T) {
	f := &faulty{dropK: 10, delayK: 7, delay: 300 * time.Millisecond, replay: true}
	addr := startFaulty(t, f)
	const timeout = 100 * time.Millisecond
	all, last, st := run(t, Config{Streams: []StreamConfig{{Kind: model.ProbeSTAMP, Target: addr, Rate: 100, Timeout: timeout}}}, 2*time.Second)
	s := st[0]
	if s.Sent < 100 {
		t.Fatalf("stats %+v", s)
	}
	// Every final sample: dropped probes lost without RTT, delayed ones
	// late with an RTT near the delay, the rest answered in time; every
	// replay (unchanged: a duplicate; rewritten: unmatched) matched nothing.
	var lost, lateN, ok int
	for k, smp := range last {
		seq := uint32(k[1])
		if smp.SentNs > lastSent(last)-int64(400*time.Millisecond) {
			continue // may not have resolved before Close
		}
		switch {
		case seq%10 == 9:
			if !smp.Lost || smp.Late || smp.RTTNs != -1 {
				t.Fatalf("dropped probe %d: %+v", seq, smp)
			}
			lost++
		case seq%7 == 6:
			if !smp.Lost || !smp.Late || smp.RTTNs < int64(f.delay) || smp.RTTNs > int64(f.delay+200*time.Millisecond) {
				t.Fatalf("delayed probe %d: %+v", seq, smp)
			}
			lateN++
		default:
			if smp.Lost || smp.RTTNs <= 0 || smp.RTTNs > int64(timeout) {
				t.Fatalf("probe %d: %+v", seq, smp)
			}
			ok++
		}
	}
	if lost == 0 || lateN == 0 || ok == 0 {
		t.Fatalf("lost %d late %d ok %d", lost, lateN, ok)
	}
	if s.Duplicates == 0 || s.Unmatched == 0 {
		t.Fatalf("replays not seen: %+v", s)
	}
	// A late probe has two samples (lost at its timeout, then late); no
	// other probe has more than one.
	count := map[uint32]int{}
	for _, smp := range all {
		count[smp.Seq]++
	}
	for seq, n := range count {
		if n > 1 && seq%7 != 6 {
			t.Fatalf("probe %d has %d samples", seq, n)
		}
	}
}

func TestICMPLoopback(t *testing.T) {
	p, err := New(context.Background(), Config{Streams: []StreamConfig{{Kind: model.ProbeICMP, Target: "127.0.0.1", Rate: 50}}})
	if err != nil {
		if strings.Contains(err.Error(), "CAP_NET_RAW") {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	p.Start()
	time.Sleep(time.Second)
	p.Close()
	st := p.Stats()[0]
	if st.Sent < 30 || st.Answered+2 < st.Sent || st.Unmatched != 0 {
		t.Fatalf("stats %+v", st)
	}
	for _, s := range p.Ring().Drain(nil) {
		if s.RTTNs <= 0 || s.RTTNs > int64(100*time.Millisecond) {
			t.Fatalf("sample %+v", s)
		}
	}
}

func TestTCPConnect(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	// A closed port answers with RST: also an answer.
	closed, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close()
	_, _, st := run(t, Config{Streams: []StreamConfig{
		{Kind: model.ProbeTCP, Target: ln.Addr().String(), Rate: 50},
		{Kind: model.ProbeTCP, Target: closedAddr, Rate: 20, DSCP: 10},
	}}, time.Second)
	for i, s := range st {
		if s.Sent < 15 || s.Answered+2 < s.Sent || s.Lost != 0 {
			t.Fatalf("stream %d: stats %+v", i, s)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	for _, sc := range []StreamConfig{
		{Kind: "udp", Target: "127.0.0.1:1"},
		{Kind: model.ProbeSTAMP, Target: "127.0.0.1:1", Rate: 101},
		{Kind: model.ProbeSTAMP, Target: "127.0.0.1:1", Rate: 0.5},
		{Kind: model.ProbeSTAMP, Target: "127.0.0.1:1", Timeout: time.Hour},
		{Kind: model.ProbeSTAMP, Target: "127.0.0.1:1", DSCP: 64},
		{Kind: model.ProbeSTAMP, Target: "127.0.0.1:1", PacketBytes: 46},
		{Kind: model.ProbeSTAMP, Target: "127.0.0.1:1", PacketBytes: 201},
		{Kind: model.ProbeTCP, Target: "127.0.0.1"},
		{Kind: model.ProbeSTAMP},
	} {
		p, err := New(context.Background(), Config{Streams: []StreamConfig{sc}})
		if err == nil {
			p.Close()
			t.Fatalf("%+v accepted", sc)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Fatalf("error not one line: %q", err)
		}
	}
	if _, err := New(context.Background(), Config{}); err == nil {
		t.Fatal("no streams accepted")
	}
}

func TestRingBoundedWithoutReader(t *testing.T) {
	r := NewRing(1 << 12)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range 200_000 {
		r.Push(model.ProbeSample{Seq: uint32(i), RTTNs: int64(i)})
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if r.Len() != 1<<12 || r.Dropped() != 200_000-1<<12 {
		t.Fatalf("len %d dropped %d", r.Len(), r.Dropped())
	}
	if grow := int64(after.HeapAlloc) - int64(before.HeapAlloc); grow > 1<<20 {
		t.Fatalf("heap grew %d bytes over 200k pushes", grow)
	}
	got := r.Drain(nil)
	if got[0].Seq != 200_000-1<<12 || got[len(got)-1].Seq != 199_999 {
		t.Fatalf("drained %d..%d, want the newest", got[0].Seq, got[len(got)-1].Seq)
	}
}

// TestProberRingBounded runs a real prober with nobody draining: the ring
// caps what is held.
func TestProberRingBounded(t *testing.T) {
	r, err := testreflector.Start("127.0.0.1:0", testreflector.Config{Kind: testreflector.STAMP})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ring := NewRing(16)
	all, _, st := run(t, Config{Ring: ring, Streams: []StreamConfig{{Kind: model.ProbeSTAMP, Target: r.Addr(), Rate: 100}}}, 500*time.Millisecond)
	if len(all) > 16 || ring.Dropped() == 0 || ring.Dropped()+uint64(len(all)) < st[0].Answered {
		t.Fatalf("held %d dropped %d answered %d", len(all), ring.Dropped(), st[0].Answered)
	}
}

var _ = errors.New
