package passive

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/pcap"
)

// timedPacket is one IP packet of a generated capture.
type timedPacket struct {
	t    int64
	data []byte
}

// manyFlows generates n interleaved flows over a few minutes of capture
// time: TCP exchanges with timestamps that close with FINs, with a RST, or
// not at all (evicted idle), some reusing a 4-tuple, and spinning QUIC
// flows; in time order.
func manyFlows(seed uint64, n int) []timedPacket {
	rng := rand.New(rand.NewPCG(seed, 7))
	var out []timedPacket
	add := func(t int64, b []byte) { out = append(out, timedPacket{t, b}) }
	for i := range n {
		cli := [4]byte{198, 18, byte(2 + i/250), byte(i % 250)}
		srv := [4]byte{198, 19, 0, byte(1 + rng.IntN(4))}
		cport := uint16(30000 + rng.IntN(30000))
		rtt := int64(1e6 + rng.IntN(80e6))
		t := int64(rng.IntN(300e9))
		if i%10 == 9 {
			// QUIC: an Initial, the server's answer, spinning short headers.
			dcid := []byte{byte(i), 1, 2, 3, 4, 5, 6, 7}
			add(t, udpPacket(cli, srv, cport, 443, longHeader([]byte{0, 0, 0, 1}, 1200)))
			spin := false
			for k := range 20 + rng.IntN(200) {
				t += rtt / 2
				if k%4 == 0 {
					spin = !spin
				}
				b := append([]byte{0x40}, dcid[:4]...)
				if spin {
					b[0] |= 0x20
				}
				b = append(b, make([]byte, 30)...)
				add(t, udpPacket(srv, cli, 443, cport, b))
				add(t+rtt/4, udpPacket(cli, srv, cport, 443, append([]byte{b[0]}, dcid...)))
			}
			continue
		}
		for reuse := range 1 + rng.IntN(2)*(i%7/6) {
			cs, ss := rng.Uint32(), rng.Uint32()
			ts := func() uint32 { return uint32(t / 1e6) }
			up := func(seq, ack uint32, fl uint8, n int) {
				add(t, ipHeader(cli, srv, 6, uint16(reuse), tcpSeg(cport, 80, seq, ack, fl, ts(), ts()-1, n)))
			}
			down := func(seq, ack uint32, fl uint8, n int) {
				add(t, ipHeader(srv, cli, 6, uint16(reuse), tcpSeg(80, cport, seq, ack, fl, ts(), ts()-1, n)))
			}
			up(cs, 0, flagSYN, 0)
			t += rtt
			down(ss, cs+1, flagSYN|flagACK, 0)
			cs, ss = cs+1, ss+1
			t += 1e5
			for range 1 + rng.IntN(60) {
				up(cs, ss, flagACK, 0)
				sz := 100 + rng.IntN(1400)
				down(ss, cs, flagACK|flagPSH, sz)
				if rng.IntN(30) == 0 {
					t += 2 * rtt
					down(ss, cs, flagACK|flagPSH, sz) // a retransmission
				}
				ss += uint32(sz)
				t += rtt
				up(cs, ss, flagACK, 0)
				t += int64(rng.IntN(20e6))
				if rng.IntN(200) == 0 {
					// A pause near the idle timeout (20 s in the tests):
					// whether the flow is split depends on when scans run.
					t += 19e9 + int64(rng.IntN(5e9))
				}
			}
			switch rng.IntN(3) {
			case 0:
				down(ss, cs, flagFIN|flagACK, 0)
				t += rtt
				up(cs, ss+1, flagFIN|flagACK, 0)
				down(ss+1, cs+1, flagACK, 0)
			case 1:
				up(cs, ss, flagRST, 0)
			}
			t += 1e9
		}
	}
	slices.SortStableFunc(out, func(a, b timedPacket) int { return cmp.Compare(a.t, b.t) })
	return out
}

func analyseAll(cfg Config, pkts []timedPacket) (*model.Analysis, *Analyzer) {
	a := New(cfg)
	for _, p := range pkts {
		a.Packet(p.t+1700000000e9, p.data)
	}
	return a.Finish(nil), a
}

// figures is an analysis without its runtime figures (wall time, rate),
// as JSON: what must not depend on how the analysis ran.
func figures(t *testing.T, r *model.Analysis) string {
	t.Helper()
	c := *r
	c.Stats = model.AnalyzeRuntime{}
	b, err := json.Marshal(&c)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRecordsStreamed: every finished flow is handed to OnRecord once, as
// it finishes; with DropRecords none is kept, the counts say how many
// there were, and the streamed records are the kept ones.
func TestRecordsStreamed(t *testing.T) {
	pkts := manyFlows(1, 600)
	kept, _ := analyseAll(Config{Interface: -1, IdleTimeout: 20 * time.Second}, pkts)
	if len(kept.TCP) < 500 || len(kept.QUIC) < 50 || kept.Stats.EvictedFlows == 0 {
		t.Fatalf("%d TCP, %d QUIC, %d evicted: the generator should give hundreds, with evictions", len(kept.TCP), len(kept.QUIC), kept.Stats.EvictedFlows)
	}
	var got model.Analysis
	var order []float64
	r, a := analyseAll(Config{Interface: -1, IdleTimeout: 20 * time.Second, DropRecords: true, OnRecord: func(rec Record) {
		switch {
		case rec.TCP != nil:
			got.TCP = append(got.TCP, *rec.TCP)
			order = append(order, rec.TCP.StartS+rec.TCP.DurationS)
		case rec.QUIC != nil:
			got.QUIC = append(got.QUIC, *rec.QUIC)
		}
	}}, pkts)
	if len(r.TCP) != 0 || len(r.QUIC) != 0 {
		t.Fatalf("DropRecords kept %d TCP and %d QUIC records", len(r.TCP), len(r.QUIC))
	}
	if nt, nq := a.Records(); nt != len(kept.TCP) || nq != len(kept.QUIC) {
		t.Errorf("Records() = %d, %d; want %d, %d", nt, nq, len(kept.TCP), len(kept.QUIC))
	}
	// Streamed as they finish: a record streamed early ended early (an
	// eviction comes within the idle timeout and a scan of the end).
	if order[0] > order[len(order)-1] {
		t.Errorf("the first record streamed ended at %.1f s, after the last one (%.1f s)", order[0], order[len(order)-1])
	}
	got.TCP = byStart(got.TCP, func(c *model.TCPConn) (float64, string, string) { return c.StartS, c.A, c.B })
	got.QUIC = byStart(got.QUIC, func(c *model.QUICConn) (float64, string, string) { return c.StartS, c.Client, c.Server })
	want := model.Analysis{TCP: kept.TCP, QUIC: kept.QUIC}
	if g, w := figures(t, &got), figures(t, &want); g != w {
		t.Errorf("streamed records differ from the kept ones")
	}
}

// pcapOf writes packets as a raw-IP pcap.
func pcapOf(t *testing.T, pkts []timedPacket) []byte {
	t.Helper()
	var b bytes.Buffer
	w, err := pcap.NewWriter(&b, pcap.LinkRaw, 65535)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pkts {
		if err := w.Write(p.t+1700000000e9, p.data, len(p.data)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestWorkersSameFigures: 1, 2 and 3 workers give the same analysis
// (every record, counter and note; not the runtime figures), with flows
// evicted idle, closed, and reused, and a few packets that are not IP or
// malformed, and a batch of fragments followed by one of malformed
// packets (the slots of the batch before must not tell them fragments);
// read a batch at a time, the same as packet by packet.
func TestWorkersSameFigures(t *testing.T) {
	pkts := manyFlows(2, 800)
	pkts = append(pkts[:100:100], append([]timedPacket{{pkts[100].t, []byte{0x45, 0, 0}}, {pkts[100].t, []byte{0x60}}}, pkts[100:]...)...)
	frag := []byte{0x45, 0, 0, 28, 0, 1, 0x20, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2, 0, 80, 0, 81, 0, 0, 0, 0}
	var odd []timedPacket
	for range 2 * batchLen {
		odd = append(odd, timedPacket{pkts[300].t, frag})
	}
	for range 2 * batchLen {
		odd = append(odd, timedPacket{pkts[300].t, []byte{0x45, 0, 0}})
	}
	pkts = append(pkts[:300:300], append(odd, pkts[300:]...)...)
	file := pcapOf(t, pkts)
	path := filepath.Join(t.TempDir(), "many.pcap")
	if err := os.WriteFile(path, file, 0o644); err != nil {
		t.Fatal(err)
	}
	// Read goes packet by packet (dispatch); ReadFiles reads a batch at
	// a time (readBatched with one worker, readShards with several).
	var byPacket string
	for _, files := range []bool{false, true} {
		var want string
		for _, n := range []int{1, 2, 3} {
			a := New(Config{Interface: -1, IdleTimeout: 20 * time.Second, Workers: n})
			if n > 1 && len(a.shards) != n {
				t.Fatalf("%d workers: %d shards", n, len(a.shards))
			}
			if files {
				if _, errs := a.ReadFiles([]string{path}); errors.Join(errs...) != nil {
					t.Fatal(errs)
				}
			} else if _, err := a.Read(bytes.NewReader(file), model.CaptureFile{Path: "many", DamageOffset: -1}); err != nil {
				t.Fatal(err)
			}
			r := a.Finish(nil)
			if n == 1 {
				if len(r.TCP) < 600 || r.Stats.EvictedFlows == 0 || r.Skipped == 0 {
					t.Fatalf("%d TCP, %d evicted, %d skipped: want hundreds, evictions, skips", len(r.TCP), r.Stats.EvictedFlows, r.Skipped)
				}
				want = figures(t, r)
				c := *r
				c.Files = nil // the path and format
				if !files {
					byPacket = figures(t, &c)
				} else if got := figures(t, &c); got != byPacket {
					t.Fatalf("read a batch at a time: analysis differs from packet by packet: %.300q", diffAt(got, byPacket))
				}
				continue
			}
			if got := figures(t, r); got != want {
				for i := 0; i < min(len(got), len(want)); i++ {
					if got[i] != want[i] {
						t.Fatalf("files %v, %d workers: analysis differs from one worker's at byte %d: %.200q, want %.200q", files, n, i, got[i:], want[i:])
					}
				}
				t.Fatalf("files %v, %d workers: analysis length %d, one worker's %d", files, n, len(got), len(want))
			}
		}
	}
}

// TestSameAsBefore: the analysis of 400 generated flows (manyFlows(4,
// 400): evictions, closes, reuse, QUIC) is byte for byte the one sonde
// gave before records were streamed and packets split across workers
// (testdata/analyze-c33b3ed.json.gz, written by this test's generator on
// main at c33b3ed), with one worker and with two.
func TestSameAsBefore(t *testing.T) {
	f, err := os.Open("testdata/analyze-c33b3ed.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	want, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	pkts := manyFlows(4, 400)
	file := pcapOf(t, pkts)
	for _, workers := range []int{1, 2} {
		a := New(Config{Interface: -1, IdleTimeout: 20 * time.Second, Workers: workers})
		for _, p := range pkts {
			a.Packet(p.t+1700000000e9, p.data)
		}
		if workers > 1 {
			// Packet analyses in the caller; files are split.
			a = New(Config{Interface: -1, IdleTimeout: 20 * time.Second, Workers: workers})
			if _, err := a.Read(bytes.NewReader(file), model.CaptureFile{}); err != nil {
				t.Fatal(err)
			}
		}
		r := a.Finish(nil)
		r.Files = nil
		if got := figures(t, r); got != string(want) {
			t.Errorf("%d workers: the analysis differs from c33b3ed's (%d and %d bytes of JSON)", workers, len(got), len(want))
		}
	}
}

// TestShardOf: every hash maps to a shard; shard 0 (the reader's) gets
// its share (7 units against 13 with two workers, 1 against 10 for
// each other with more) and the others equal ones.
func TestShardOf(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{2, 3, 8} {
		count := make([]int, n)
		for range 30000 {
			i := shardOf(rng.Uint64(), n)
			if i < 0 || i >= n {
				t.Fatalf("n=%d: shard %d", n, i)
			}
			count[i]++
		}
		want := 0.1
		if n == 2 {
			want = 7.0 / 13
		}
		for i := 1; i < n; i++ {
			if r := float64(count[0]) / float64(count[i]); r < want*0.85 || r > want*1.15 {
				t.Errorf("n=%d: shard 0 has %d, shard %d has %d", n, count[0], i, count[i])
			}
			if r := float64(count[i]) / float64(count[1]); r < 0.9 || r > 1.1 {
				t.Errorf("n=%d: shard %d has %d, shard 1 has %d", n, i, count[i], count[1])
			}
		}
	}
}

// TestWorkersStream: with three workers every record is streamed once
// (the shards finish flows concurrently: OnRecord is called one at a
// time), the same records as one worker streams.
func TestWorkersStream(t *testing.T) {
	file := pcapOf(t, manyFlows(6, 300))
	stream := func(workers int) string {
		var got model.Analysis
		a := New(Config{Interface: -1, IdleTimeout: 20 * time.Second, Workers: workers, DropRecords: true, OnRecord: func(r Record) {
			if r.TCP != nil {
				got.TCP = append(got.TCP, *r.TCP)
			} else {
				got.QUIC = append(got.QUIC, *r.QUIC)
			}
		}})
		if _, err := a.Read(bytes.NewReader(file), model.CaptureFile{}); err != nil {
			t.Fatal(err)
		}
		a.Finish(nil)
		got.TCP = byStart(got.TCP, func(c *model.TCPConn) (float64, string, string) { return c.StartS, c.A, c.B })
		got.QUIC = byStart(got.QUIC, func(c *model.QUICConn) (float64, string, string) { return c.StartS, c.Client, c.Server })
		return figures(t, &got)
	}
	if one, three := stream(1), stream(3); one != three {
		t.Error("three workers streamed other records than one")
	}
}

// TestReadAheadSameFigures: a file read through ReadFile, whose packets
// are decoded and their flows prefetched a batch ahead (readahead.go),
// gives the analysis of the same packets read one at a time (Read).
func TestReadAheadSameFigures(t *testing.T) {
	pkts := manyFlows(4, 400)
	pkts = append(pkts[:100:100], append([]timedPacket{{pkts[100].t, []byte{0x45, 0, 0}}, {pkts[100].t, []byte{0x60}}}, pkts[100:]...)...)
	file := pcapOf(t, pkts)
	path := filepath.Join(t.TempDir(), "many.pcap")
	if err := os.WriteFile(path, file, 0o644); err != nil {
		t.Fatal(err)
	}
	var got [2]string
	for i := range got {
		a := New(Config{Interface: -1, IdleTimeout: 20 * time.Second})
		var err error
		if i == 0 {
			_, err = a.Read(bytes.NewReader(file), model.CaptureFile{Path: path, DamageOffset: -1})
		} else {
			_, err = a.ReadFile(path)
		}
		if err != nil {
			t.Fatal(err)
		}
		r := a.Finish(nil)
		if len(r.TCP) < 300 || len(r.QUIC) == 0 || r.Stats.EvictedFlows == 0 || r.Skipped == 0 {
			t.Fatalf("%d TCP, %d QUIC, %d evicted, %d skipped: want hundreds, QUIC, evictions, skips", len(r.TCP), len(r.QUIC), r.Stats.EvictedFlows, r.Skipped)
		}
		r.Files[0].Format = "" // Read's record has none
		got[i] = figures(t, r)
	}
	if got[0] != got[1] {
		t.Fatalf("ReadFile's analysis (%d bytes of JSON) differs from Read's (%d)", len(got[1]), len(got[0]))
	}
}

// diffAt is a from where it first differs from b.
func diffAt(a, b string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return a[max(i-100, 0):]
		}
	}
	return a[min(len(a), len(b)):]
}
