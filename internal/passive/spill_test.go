package passive

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/model"
)

// TestSpillSameRecords: with the records spilled to a file in runs of 37
// (Config.Spill), the analysis read back (EachTCP, EachQUIC, counts, HTTP
// page loads) is the one kept in memory, with one worker and with two.
func TestSpillSameRecords(t *testing.T) {
	file := pcapOf(t, manyFlows(3, 700))
	run := func(workers int, spill bool) (*model.Analysis, *Analyzer) {
		a := New(Config{Interface: -1, IdleTimeout: 20 * time.Second, Workers: workers, Spill: spill, SpillDir: t.TempDir()})
		if spill {
			a.spill.run = 37
		}
		if _, err := a.Read(bytes.NewReader(file), model.CaptureFile{}); err != nil {
			t.Fatal(err)
		}
		return a.Finish(nil), a
	}
	kept, _ := run(1, false)
	if len(kept.TCP) < 500 || len(kept.QUIC) < 50 {
		t.Fatalf("%d TCP, %d QUIC records: want hundreds", len(kept.TCP), len(kept.QUIC))
	}
	want := figures(t, kept)
	for _, workers := range []int{1, 2} {
		r, a := run(workers, true)
		if r.Spill == nil || len(r.TCP) != 0 || !a.spill.spilled() {
			t.Fatalf("%d workers: records not spilled (%d in memory)", workers, len(r.TCP))
		}
		if r.NumTCP() != len(kept.TCP) || r.NumQUIC() != len(kept.QUIC) {
			t.Errorf("%d workers: %d TCP and %d QUIC records spilled, want %d and %d", workers, r.NumTCP(), r.NumQUIC(), len(kept.TCP), len(kept.QUIC))
		}
		// Read back twice (the text output does): the same both times.
		for range 2 {
			back := readBack(t, r)
			if got := figures(t, back); got != want {
				t.Fatalf("%d workers: the spilled analysis differs from the kept one", workers)
			}
		}
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// keepTCP is a copy of c that EachTCP's next record does not change (its
// goodput series' arrays are reused).
func keepTCP(c *model.TCPConn) model.TCPConn {
	k := *c
	k.AB.GoodputSeries = slices.Clone(c.AB.GoodputSeries)
	k.BA.GoodputSeries = slices.Clone(c.BA.GoodputSeries)
	return k
}

// readBack returns r with its spilled records read back into TCP and
// QUIC.
func readBack(t *testing.T, r *model.Analysis) *model.Analysis {
	t.Helper()
	back := *r
	back.Spill = nil
	if err := r.EachTCP(func(c *model.TCPConn) error { back.TCP = append(back.TCP, keepTCP(c)); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := r.EachQUIC(func(c *model.QUICConn) error { back.QUIC = append(back.QUIC, *c); return nil }); err != nil {
		t.Fatal(err)
	}
	return &back
}

// TestSpillSmall: a capture of fewer records than a run never touches the
// disk: the records are the analysis's, as without a spill.
func TestSpillSmall(t *testing.T) {
	pkts := manyFlows(5, 100)
	kept, _ := analyseAll(Config{Interface: -1, IdleTimeout: 20 * time.Second}, pkts)
	r, a := analyseAll(Config{Interface: -1, IdleTimeout: 20 * time.Second, Spill: true, SpillDir: t.TempDir()}, pkts)
	if r.Spill != nil || a.spill.f != nil {
		t.Fatal("a small capture was spilled")
	}
	if figures(t, r) != figures(t, kept) {
		t.Error("the analysis differs from the one without a spill")
	}
}

// TestOnSample: OnSample streams every sample that KeepSamples keeps (the
// same flows, methods, times, values and flags), with one worker and with
// two, and the summaries count the valid ones.
func TestOnSample(t *testing.T) {
	file := pcapOf(t, manyFlows(7, 300))
	key := func(s model.PassiveRTT) string {
		return fmt.Sprintf("%s|%s|%.9f|%.6f|%v|%s", s.Flow, s.Method, s.TimeS, s.RTTMs, s.Valid, s.Flag)
	}
	a := New(Config{Interface: -1, IdleTimeout: 20 * time.Second, KeepSamples: true})
	if _, err := a.Read(bytes.NewReader(file), model.CaptureFile{}); err != nil {
		t.Fatal(err)
	}
	kept := a.Finish(nil)
	var want []string
	valid := 0
	for _, s := range a.Samples(nil) {
		want = append(want, key(s))
		if s.Valid {
			valid++
		}
	}
	sum := 0
	for _, c := range kept.TCP {
		sum += c.TSFull.Samples + c.TSSideA.Samples + c.TSSideB.Samples + c.SeqAckSideA.Samples + c.SeqAckSideB.Samples
	}
	for _, q := range kept.QUIC {
		sum += q.SpinRTT[0].Samples + q.SpinRTT[1].Samples + q.Component[0].Samples + q.Component[1].Samples
	}
	if len(want) < 1000 || sum != valid {
		t.Fatalf("%d samples, %d valid, the summaries count %d", len(want), valid, sum)
	}
	slices.Sort(want)
	for _, workers := range []int{1, 2} {
		var got []string
		a := New(Config{Interface: -1, IdleTimeout: 20 * time.Second, Workers: workers, OnSample: func(s model.PassiveRTT) { got = append(got, key(s)) }})
		if _, err := a.Read(bytes.NewReader(file), model.CaptureFile{}); err != nil {
			t.Fatal(err)
		}
		a.Finish(nil)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%d workers: %d samples streamed, %d kept, or they differ", workers, len(got), len(want))
		}
	}
}

// httpFlows: n HTTP/1.1 exchanges on their own connections from three
// clients, a few hundred ms apart (page loads of several connections).
func httpFlows(n int) []timedPacket {
	var out []timedPacket
	for i := range n {
		cli := [4]byte{198, 18, 9, byte(1 + i%3)}
		srv := [4]byte{198, 19, 9, 1}
		cport := uint16(40000 + i)
		t := int64(i) * 300e6
		cs, ss := uint32(1000*i), uint32(7000*i)
		seg := func(up bool, seq, ack uint32, fl uint8, payload string) {
			b := tcpSeg(cport, 80, seq, ack, fl, uint32(t/1e6), 1, 0)
			src, dst := cli, srv
			if !up {
				b = tcpSeg(80, cport, seq, ack, fl, uint32(t/1e6), 1, 0)
				src, dst = srv, cli
			}
			out = append(out, timedPacket{t, ipHeader(src, dst, 6, 0, append(b, payload...))})
			t += 10e6
		}
		req := "GET /p" + fmt.Sprint(i) + " HTTP/1.1\r\nHost: x.test\r\n\r\n"
		resp := "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
		seg(true, cs, 0, flagSYN, "")
		seg(false, ss, cs+1, flagSYN|flagACK, "")
		seg(true, cs+1, ss+1, flagACK|flagPSH, req)
		seg(false, ss+1, cs+1+uint32(len(req)), flagACK|flagPSH, resp)
		seg(true, cs+1+uint32(len(req)), ss+1+uint32(len(resp)), flagFIN|flagACK, "")
		seg(false, ss+1+uint32(len(resp)), cs+2+uint32(len(req)), flagFIN|flagACK, "")
	}
	slices.SortStableFunc(out, func(a, b timedPacket) int { return cmp.Compare(a.t, b.t) })
	return out
}

// TestSpillHTTPPages: the page loads of spilled HTTP connections are those
// of the connections kept in memory.
func TestSpillHTTPPages(t *testing.T) {
	pkts := httpFlows(90)
	kept, _ := analyseAll(Config{Interface: -1}, pkts)
	if len(kept.HTTPPages) == 0 || len(kept.TCP) != 90 || kept.TCP[0].HTTP == nil {
		t.Fatalf("%d pages, %d connections: the generator should give HTTP page loads", len(kept.HTTPPages), len(kept.TCP))
	}
	a := New(Config{Interface: -1, Spill: true, SpillDir: t.TempDir()})
	a.spill.run = 7
	for _, p := range pkts {
		a.Packet(p.t+1700000000e9, p.data)
	}
	r := a.Finish(nil)
	defer a.Close()
	if r.Spill == nil {
		t.Fatal("not spilled")
	}
	back := *r
	back.Spill = nil
	_ = r.EachTCP(func(c *model.TCPConn) error { back.TCP = append(back.TCP, keepTCP(c)); return nil })
	if figures(t, &back) != figures(t, kept) {
		t.Error("the spilled analysis (page loads, records) differs from the kept one")
	}
}

// TestFeedWorkers: packets fed one at a time (a live source) through two
// workers give one worker's analysis, though the caller reuses its buffer.
func TestFeedWorkers(t *testing.T) {
	pkts := manyFlows(8, 300)
	want, _ := analyseAll(Config{Interface: -1, IdleTimeout: 20 * time.Second}, pkts)
	a := New(Config{Interface: -1, IdleTimeout: 20 * time.Second, Workers: 2})
	if len(a.shards) != 2 {
		t.Fatalf("%d shards", len(a.shards))
	}
	buf := make([]byte, 0, 2048)
	for _, p := range pkts {
		buf = append(buf[:0], p.data...)
		a.Feed(p.t+1700000000e9, buf)
	}
	got := a.Finish(nil)
	if len(got.TCP) < 200 || figures(t, got) != figures(t, want) {
		t.Errorf("two workers fed packets: %d TCP records, or the analysis differs from one worker's (%d)", len(got.TCP), len(want.TCP))
	}
}

// TestSpillFails: a spill that cannot write keeps the records in memory
// and says so; nothing is lost.
func TestSpillFails(t *testing.T) {
	pkts := manyFlows(9, 200)
	kept, _ := analyseAll(Config{Interface: -1, IdleTimeout: 20 * time.Second}, pkts)
	a := New(Config{Interface: -1, IdleTimeout: 20 * time.Second, Spill: true, SpillDir: t.TempDir() + "/missing"})
	a.spill.run = 37
	for _, p := range pkts {
		a.Packet(p.t+1700000000e9, p.data)
	}
	r := a.Finish(nil)
	if r.Spill != nil || len(r.Errors) != 1 || !strings.Contains(r.Errors[0], "spilling records") {
		t.Fatalf("spill %v, errors %q", r.Spill != nil, r.Errors)
	}
	r.Errors = nil
	if figures(t, r) != figures(t, kept) {
		t.Error("records were lost when the spill failed")
	}
}
