package store

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/reliability"
)

// realisticMinutes rolls up n minutes the way a monitor does (the
// reliability Roller, its default thresholds): 600 probes, a base RTT of
// 8 to 60 ms with 10 % jitter, one minute in eight loaded (up to 400 ms
// more), some loss, one-way delays (STAMP). The fleet bench's generator.
func realisticMinutes(t testing.TB, n int) []model.MonitorRollup {
	t.Helper()
	an, err := reliability.New(reliability.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 99))
	var out []model.MonitorRollup
	r := reliability.NewRoller(an.ThresholdsNs(), func(m model.MonitorRollup) { out = append(out, m) })
	for k := range n {
		base := 8e6 + float64(k%32)*52e6/32
		loaded := rng.IntN(8) == 0
		lossP := []float64{0, 0, 0.001, 0.02}[rng.IntN(4)]
		for i := range 600 {
			p := model.ProbeSample{SentNs: int64(k)*60e9 + int64(i)*100e6, Seq: uint32(k*600 + i), Load: model.LoadIdle}
			rtt := base * math.Exp(rng.NormFloat64()*0.1)
			if loaded && i > 100 && i < 500 {
				rtt += rng.Float64() * 400e6
				p.Load = model.LoadDown
			}
			p.RTTNs = int64(rtt)
			p.FwdNs, p.RevNs = p.RTTNs/2, p.RTTNs-p.RTTNs/2
			if rng.Float64() < lossP {
				p.Lost, p.RTTNs, p.FwdNs, p.RevNs = true, -1, 0, 0
			}
			if err := r.Add(p); err != nil {
				t.Fatal(err)
			}
		}
	}
	r.Flush()
	return out
}

// TestRollupCodecRealistic: realistic minutes round-trip exactly through
// the binary encoding, which is several times smaller than the JSON.
func TestRollupCodecRealistic(t *testing.T) {
	var bin, js int
	for _, m := range realisticMinutes(t, 64) {
		r, err := RollupFrom(m)
		if err != nil {
			t.Fatal(err)
		}
		if r.Data[0] != rollupDataV2 {
			t.Fatalf("new rollups are written as version %d", r.Data[0])
		}
		got, err := r.Model()
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, m) {
			t.Fatalf("minute %d read back as\n%+v\nwant\n%+v", m.MinuteNs, got, m)
		}
		j, err := json.Marshal(rollupJSON{m.Bins, m.FwdBins, m.RevBins, m.ThresholdsNs, m.Within, m.ByLoad})
		if err != nil {
			t.Fatal(err)
		}
		bin, js = bin+len(r.Data), js+len(j)
	}
	t.Logf("64 minutes: %d bytes binary, %d bytes JSON", bin, js)
	if bin*4 > js {
		t.Errorf("binary %d bytes, JSON %d: want at least 4 times smaller", bin, js)
	}
}

// TestRollupCodecOldJSON: a row an older sonde wrote (the JSON) reads as
// it did, so existing stores need no migration.
func TestRollupCodecOldJSON(t *testing.T) {
	old := []byte(`{"bins":[{"bin":800,"n":590},{"bin":1100,"n":6}],"fwd_bins":[{"bin":700,"n":596}],"rev_bins":[{"bin":701,"n":596}],` +
		`"thresholds_ns":[20000000,200000000],"within":[500,590],` +
		`"by_load":[{"load":1,"sent":500,"lost":0,"within":[500,500]},{"load":2,"sent":100,"lost":4,"within":[0,90]}]}`)
	m, err := Rollup{MinuteNs: t0, Data: old}.Model()
	if err != nil {
		t.Fatal(err)
	}
	want := model.MonitorRollup{MinuteNs: t0,
		Bins: []model.RollupBin{{Bin: 800, N: 590}, {Bin: 1100, N: 6}}, FwdBins: []model.RollupBin{{Bin: 700, N: 596}}, RevBins: []model.RollupBin{{Bin: 701, N: 596}},
		ThresholdsNs: []int64{20e6, 200e6}, Within: []uint32{500, 590},
		ByLoad: []model.RollupLoad{{Load: 1, Sent: 500, Lost: 0, Within: []uint32{500, 500}}, {Load: 2, Sent: 100, Lost: 4, Within: []uint32{0, 90}}}}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("old JSON read as\n%+v\nwant\n%+v", m, want)
	}
	// Rewritten, it is binary and reads the same.
	r, err := RollupFrom(m)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := r.Model(); err != nil || !reflect.DeepEqual(again, want) {
		t.Fatalf("rewritten: %+v, %v", again, err)
	}
	if len(r.Data)*3 > len(old) {
		t.Errorf("binary %d bytes for %d of JSON", len(r.Data), len(old))
	}
}

// appendV1 is the hourly aggregate's first encoding, as internal/fleet
// wrote it before version 2 (hours so stored are still read).
func appendV1(d *RollupData) []byte {
	b := []byte{rollupDataV1}
	b = binary.AppendUvarint(b, uint64(len(d.ThresholdsNs)))
	for i, l := range d.ThresholdsNs {
		b = binary.AppendUvarint(b, uint64(l))
		b = binary.AppendUvarint(b, d.Within[i])
	}
	b = binary.AppendUvarint(b, uint64(len(d.Bins)))
	prev := 0
	for _, x := range d.Bins {
		b = binary.AppendUvarint(b, uint64(int(x.Bin)-prev))
		b = binary.AppendUvarint(b, uint64(x.N))
		prev = int(x.Bin)
	}
	b = binary.AppendUvarint(b, uint64(len(d.ByLoad)))
	for _, l := range d.ByLoad {
		b = binary.AppendUvarint(b, uint64(l.Load))
		b = binary.AppendUvarint(b, l.Sent)
		b = binary.AppendUvarint(b, l.Lost)
		for _, w := range l.Within {
			b = binary.AppendUvarint(b, w)
		}
	}
	return b
}

func hourLike() RollupData {
	return RollupData{
		Bins:         []model.RollupBin{{Bin: 0, N: 3}, {Bin: 5, N: 1}, {Bin: 6, N: 70000}, {Bin: 7, N: 2}, {Bin: 1048, N: 1}},
		ThresholdsNs: []int64{50e6, 100e6, 1e9, 5e9},
		Within:       []uint64{30000, 60000, 70006, 70007},
		ByLoad: []LoadCounts{{Load: model.LoadIdle, Sent: 60000, Lost: 3, Within: []uint64{30000, 59997, 59997, 59997}},
			{Load: model.LoadBoth, Sent: 10010, Lost: 0, Within: []uint64{0, 3, 10009, 10010}}},
	}
}

// TestRollupCodecV1Hours: an hour in the first hourly encoding decodes to
// the same data as in version 2.
func TestRollupCodecV1Hours(t *testing.T) {
	d := hourLike()
	var got RollupData
	if err := got.UnmarshalBinary(appendV1(&d)); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, d) {
		t.Fatalf("v1 hour read as\n%+v\nwant\n%+v", got, d)
	}
	b, err := d.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	var got2 RollupData
	if err := got2.UnmarshalBinary(b); err != nil || !reflect.DeepEqual(got2, d) {
		t.Fatalf("v2 hour read as %+v, %v", got2, err)
	}
}

// TestRollupCodecDamage: every truncation of valid data is an error;
// flipped bytes are an error or decode within the bounds; decoding into
// a reused value leaves nothing of the previous one.
func TestRollupCodecDamage(t *testing.T) {
	d := hourLike()
	d.FwdBins = []model.RollupBin{{Bin: 9, N: 1}}
	for _, data := range [][]byte{mustAppend(t, &d), appendV1(&d)} {
		for i := range data {
			var got RollupData
			if err := got.UnmarshalBinary(data[:i]); err == nil {
				t.Fatalf("data cut at %d of %d bytes decoded", i, len(data))
			}
			c := slices.Clone(data)
			c[i] ^= 0xff
			_ = got.UnmarshalBinary(c)
		}
	}
	var reused RollupData
	if err := reused.UnmarshalBinary(mustAppend(t, &d)); err != nil {
		t.Fatal(err)
	}
	empty := RollupData{}
	if err := reused.UnmarshalBinary(mustAppend(t, &empty)); err != nil || !reflect.DeepEqual(reused, empty) {
		t.Fatalf("empty data over a reused value: %+v, %v", reused, err)
	}
	for _, bad := range [][]byte{nil, {0}, {3}, {'['}, {rollupDataV2, 0, 0, 0, 0, 0, 1}} {
		if err := reused.UnmarshalBinary(bad); err == nil {
			t.Errorf("%x decoded", bad)
		}
	}
	// A huge threshold scale fails at once (found by FuzzHourData: it
	// once looped that many times).
	scale := append(binary.AppendUvarint([]byte{rollupDataV2, 7}, 1<<62), "000000000000000000"...)
	if err := reused.UnmarshalBinary(scale); err == nil {
		t.Error("a threshold scale of 2^62 decoded")
	}
	// A count claiming more than the bytes left fails before allocating.
	huge := binary.AppendUvarint([]byte{rollupDataV2, 0}, 1<<40)
	if err := reused.UnmarshalBinary(huge); err == nil {
		t.Error("a run count of 2^40 decoded")
	}
}

func mustAppend(t testing.TB, d *RollupData) []byte {
	t.Helper()
	b, err := d.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRollupCodecBadInput: what the encoding cannot hold is ErrBadInput.
func TestRollupCodecBadInput(t *testing.T) {
	for name, d := range map[string]RollupData{
		"bins out of order":   {Bins: []model.RollupBin{{Bin: 3, N: 1}, {Bin: 3, N: 1}}},
		"within missing":      {ThresholdsNs: []int64{1}},
		"load within missing": {ThresholdsNs: []int64{1}, Within: []uint64{1}, ByLoad: []LoadCounts{{Load: 1}}},
		"65 thresholds":       {ThresholdsNs: make([]int64, 65), Within: make([]uint64, 65)},
	} {
		if _, err := d.AppendBinary(nil); !errors.Is(err, ErrBadInput) {
			t.Errorf("%s: %v, want ErrBadInput", name, err)
		}
	}
	// Encodable, but a count over a minute's uint32 is not a minute.
	d := RollupData{ThresholdsNs: []int64{1}, Within: []uint64{1 << 32}}
	if _, err := (Rollup{Data: mustAppend(t, &d)}).Model(); err == nil {
		t.Error("a minute counting 2^32 within decoded")
	}
}

// FuzzRollupData: decoding arbitrary bytes never panics, and what decodes
// encodes and decodes again to the same value; data built from the fuzz
// input round-trips exactly through the encoding.
func FuzzRollupData(f *testing.F) {
	for _, m := range realisticMinutes(f, 3) {
		r, err := RollupFrom(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(r.Data)
		j, _ := json.Marshal(rollupJSON{m.Bins, m.FwdBins, m.RevBins, m.ThresholdsNs, m.Within, m.ByLoad})
		f.Add(j)
	}
	h := hourLike()
	f.Add(appendV1(&h))
	f.Add(mustAppend(f, &h))
	f.Add([]byte{rollupDataV2, 1, 3, 0x7f, 1, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		// Binary data that decodes re-encodes to the same value (JSON may
		// hold what version 2 refuses, such as bins out of order).
		var d RollupData
		if err := d.UnmarshalBinary(data); err == nil && data[0] != '{' {
			b, err := d.AppendBinary(nil)
			var again RollupData
			if err == nil {
				err = again.UnmarshalBinary(b)
			}
			if err != nil || !reflect.DeepEqual(again, d) {
				t.Fatalf("decoded %+v, re-encoded and decoded %+v, %v", d, again, err)
			}
		}
		// The input read as a rollup: it must round-trip exactly.
		in := fromFuzz(data)
		b, err := in.AppendBinary(nil)
		if err != nil {
			t.Fatal(err)
		}
		var out RollupData
		if err := out.UnmarshalBinary(b); err != nil || !reflect.DeepEqual(out, in) {
			t.Fatalf("round trip:\n%+v\n%+v, %v", in, out, err)
		}
	})
}

// fromFuzz builds valid rollup data from arbitrary bytes: any thresholds
// and counts, ascending bins, load states with their counts within.
func fromFuzz(b []byte) RollupData {
	next := func() uint64 {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			b = nil
			return 0
		}
		b = b[n:]
		return v
	}
	var d RollupData
	n := int(next() % 8)
	for range n {
		d.ThresholdsNs = append(d.ThresholdsNs, int64(next())*[]int64{1, 1000, 1e6, -1}[next()%4])
		d.Within = append(d.Within, next())
	}
	for _, h := range []*[]model.RollupBin{&d.Bins, &d.FwdBins, &d.RevBins} {
		bin := uint64(0)
		for i := range next() % 64 {
			if i > 0 {
				bin += 1 + next()%3
			} else {
				bin = next() % 1100
			}
			if bin > maxRollupBin {
				break
			}
			*h = append(*h, model.RollupBin{Bin: uint16(bin), N: uint32(next())})
		}
	}
	for range next() % 6 {
		l := LoadCounts{Load: model.LoadState(next()), Sent: next(), Lost: next()}
		for range n {
			l.Within = append(l.Within, next())
		}
		d.ByLoad = append(d.ByLoad, l)
	}
	return d
}

// BenchmarkRollupCodec: encode and decode of a realistic minute, version
// 2 against the JSON it replaces; B/row is the data's size.
func BenchmarkRollupCodec(b *testing.B) {
	ms := realisticMinutes(b, 64)
	jsonOf := func(m model.MonitorRollup) []byte {
		j, err := json.Marshal(rollupJSON{m.Bins, m.FwdBins, m.RevBins, m.ThresholdsNs, m.Within, m.ByLoad})
		if err != nil {
			b.Fatal(err)
		}
		return j
	}
	size := func(b *testing.B, f func(model.MonitorRollup) []byte) {
		n := 0
		for _, m := range ms {
			n += len(f(m))
		}
		b.ReportMetric(float64(n)/float64(len(ms)), "B/row")
	}
	binOf := func(m model.MonitorRollup) []byte {
		r, err := RollupFrom(m)
		if err != nil {
			b.Fatal(err)
		}
		return r.Data
	}
	b.Run("encode/json", func(b *testing.B) {
		for i := range b.N {
			jsonOf(ms[i%len(ms)])
		}
		size(b, jsonOf)
	})
	b.Run("encode/binary", func(b *testing.B) {
		for i := range b.N {
			binOf(ms[i%len(ms)])
		}
		size(b, binOf)
	})
	for _, c := range []struct {
		name string
		of   func(model.MonitorRollup) []byte
	}{{"json", jsonOf}, {"binary", binOf}} {
		rows := make([]Rollup, len(ms))
		for i, m := range ms {
			rows[i] = Rollup{Data: c.of(m)}
		}
		b.Run("decode-model/"+c.name, func(b *testing.B) {
			for i := range b.N {
				if _, err := rows[i%len(rows)].Model(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("decode-reused/"+c.name, func(b *testing.B) {
			var d RollupData
			for i := range b.N {
				if err := d.UnmarshalBinary(rows[i%len(rows)].Data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRollupRowBytes writes 100,000 realistic minute rollups (4
// streams, 240-row batches as the fleet bench writes) to SQLite with the
// data in each encoding and reports the bytes a row takes on disk, its
// primary key included (B/row), and the insert rate.
func BenchmarkRollupRowBytes(b *testing.B) {
	const rows, streams, perBatch = 100_000, 4, 240
	pool := realisticMinutes(b, 256)
	for _, enc := range []string{"json", "binary"} {
		data := make([][]byte, len(pool))
		for i, m := range pool {
			if enc == "json" {
				j, err := json.Marshal(rollupJSON{m.Bins, m.FwdBins, m.RevBins, m.ThresholdsNs, m.Within, m.ByLoad})
				if err != nil {
					b.Fatal(err)
				}
				data[i] = j
				continue
			}
			data[i] = mustAppend(b, &RollupData{Bins: m.Bins, FwdBins: m.FwdBins, RevBins: m.RevBins, ThresholdsNs: m.ThresholdsNs,
				Within: widen(m.Within), ByLoad: func() (ls []LoadCounts) {
					for _, l := range m.ByLoad {
						ls = append(ls, LoadCounts{Load: l.Load, Sent: uint64(l.Sent), Lost: uint64(l.Lost), Within: widen(l.Within)})
					}
					return ls
				}()})
		}
		b.Run(enc, func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				ctx := context.Background()
				st, mid := benchStore(b, filepath.Join(b.TempDir(), "size.db"), Options{}, streams)
				b.StartTimer()
				start := time.Now()
				batch := &Batch{Rollups: make([]Rollup, perBatch)}
				for n := 0; n < rows; n += perBatch {
					batch.Rollups = batch.Rollups[:min(perBatch, rows-n)]
					for i := range batch.Rollups {
						k := n + i
						m := pool[k%len(pool)]
						batch.Rollups[i] = Rollup{Stream: int32(k % streams), MinuteNs: t0 + int64(k/streams)*60e9, Sent: m.Sent, Lost: m.Lost, Late: m.Late,
							SumNs: m.SumNs, SumSqNs: m.SumSqNs, MinNs: m.MinNs, MaxNs: m.MaxNs, Data: data[k%len(data)]}
					}
					if err := st.Write(ctx, mid, batch); err != nil {
						b.Fatal(err)
					}
				}
				elapsed := time.Since(start)
				b.StopTimer()
				var pages int64
				if err := st.(*sqlStore).db.QueryRow(`SELECT SUM(pgsize) FROM dbstat WHERE name IN (SELECT name FROM sqlite_master WHERE tbl_name = 'rollups')`).Scan(&pages); err != nil {
					b.Fatalf("dbstat: %v", err)
				}
				st.Close()
				b.ReportMetric(float64(pages)/rows, "B/row")
				b.ReportMetric(rows/elapsed.Seconds(), "rows/s")
				fmt.Fprintf(os.Stderr, "%s: %d rollup rows, table with its key %d bytes: %.1f B/row; inserted at %.0f rows/s\n", enc, rows, pages, float64(pages)/rows, rows/elapsed.Seconds())
			}
		})
	}
}

// BenchmarkRollupHourBytes reports the data of an hour merged from 60
// realistic minutes (RTT bins, thresholds and load states; an hour has no
// one-way bins) in the hours' first encoding (B/hour-v1) and in version 2
// (B/hour-v2), and version 2's encode time.
func BenchmarkRollupHourBytes(b *testing.B) {
	ms := realisticMinutes(b, 32*60)
	var hours []RollupData
	for h := range 32 {
		hours = append(hours, sumMinutes(ms[h*60:h*60+60]))
	}
	var v1, v2 int
	for i := range hours {
		v1 += len(appendV1(&hours[i]))
		v2 += len(mustAppend(b, &hours[i]))
	}
	buf := make([]byte, 0, 4096)
	for i := range b.N {
		buf, _ = hours[i%len(hours)].AppendBinary(buf[:0])
	}
	b.ReportMetric(float64(v1)/float64(len(hours)), "B/hour-v1")
	b.ReportMetric(float64(v2)/float64(len(hours)), "B/hour-v2")
}

// sumMinutes adds minutes of equal thresholds as the fleet's hourly
// aggregate does (RTT bins, counts within, per-load counts).
func sumMinutes(ms []model.MonitorRollup) RollupData {
	dense := make([]uint32, reliability.NumBins)
	d := RollupData{ThresholdsNs: ms[0].ThresholdsNs, Within: make([]uint64, len(ms[0].ThresholdsNs))}
	for _, m := range ms {
		for _, x := range m.Bins {
			dense[x.Bin] += x.N
		}
		for i, w := range m.Within {
			d.Within[i] += uint64(w)
		}
		for _, l := range m.ByLoad {
			k := slices.IndexFunc(d.ByLoad, func(c LoadCounts) bool { return c.Load == l.Load })
			if k < 0 {
				d.ByLoad = append(d.ByLoad, LoadCounts{Load: l.Load, Within: make([]uint64, len(l.Within))})
				k = len(d.ByLoad) - 1
			}
			d.ByLoad[k].Sent += uint64(l.Sent)
			d.ByLoad[k].Lost += uint64(l.Lost)
			for i, w := range l.Within {
				d.ByLoad[k].Within[i] += uint64(w)
			}
		}
	}
	for bin, n := range dense {
		if n > 0 {
			d.Bins = append(d.Bins, model.RollupBin{Bin: uint16(bin), N: n})
		}
	}
	return d
}
