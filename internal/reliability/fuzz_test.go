package reliability

import (
	"encoding/binary"
	"testing"

	"github.com/sonde-project/sonde/internal/model"
)

func FuzzParseProfiles(f *testing.F) {
	f.Add([]byte(`{"profiles":[{"name":"voip","latency":"150ms","reliability":0.999}]}`))
	f.Add([]byte(`{"profiles":[{"name":"x","latency":"1s","reliability":1e308}]}`))
	f.Add([]byte(`{"profiles":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ps, err := ParseProfiles(data)
		if err != nil {
			return
		}
		for _, p := range ps {
			if checkProfile(p) != nil {
				t.Fatalf("accepted an invalid profile %+v", p)
			}
		}
		// Accepted profiles must be usable by an analysis.
		if _, err := New(Config{Profiles: ps}, streams("a/stamp")); err != nil {
			t.Fatalf("accepted profiles rejected by New: %v", err)
		}
	})
}

// FuzzAnalyze feeds arbitrary samples (24 bytes each: stream, send-time
// step, RTT, flags and load) to a raw analysis and the rollups it builds
// to a second one: neither may panic, and each report's counts must agree.
func FuzzAnalyze(f *testing.F) {
	seed := make([]byte, 0, 24*4)
	for i := range 4 {
		var b [24]byte
		binary.LittleEndian.PutUint64(b[2:], uint64(100*ms))
		binary.LittleEndian.PutUint64(b[10:], uint64(20*ms+int64(i)*ms))
		b[18] = byte(i % 3)
		b[19] = byte(i % 5)
		seed = append(seed, b[:]...)
	}
	f.Add(seed)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 24*4096 {
			data = data[:24*4096] // bounded work per input
		}
		ss := streams("a/stamp", "a/icmp", "b/stamp")
		cfg := Config{Loaded: LoadedConfig{UpBps: 1e6, DownBps: 1e7}, MinWindowProbes: 1}
		a, _ := New(cfg, ss)
		var rolls []model.MonitorRollup
		r := NewRoller(a.ThresholdsNs(), func(m model.MonitorRollup) { rolls = append(rolls, m) })
		now := t0
		var accepted uint64
		for len(data) >= 24 {
			b := data[:24]
			data = data[24:]
			// Steps up to ~5 min; the occasional negative step is rejected.
			now += int64(int32(binary.LittleEndian.Uint32(b[2:]))) % (300 * sec)
			s := model.ProbeSample{
				Stream: int32(b[0] % 4), Seq: uint32(b[1]), SentNs: now,
				RTTNs: int64(binary.LittleEndian.Uint64(b[10:])) % (10000 * sec),
				Lost:  b[18]&1 != 0, Late: b[18]&2 != 0, Load: model.LoadState(b[19] % 7),
				FwdNs: int64(b[20]) * ms, RevNs: int64(b[21]) * ms,
			}
			if a.AddSample(s) == nil {
				accepted++
				if err := r.Add(s); err != nil {
					t.Fatalf("analyser accepted what the roller refused: %v", err)
				}
			}
		}
		rep, err := a.Report(t0, now)
		if err != nil {
			t.Fatal(err)
		}
		r.Flush()
		b, _ := New(cfg, ss)
		for _, ro := range rolls {
			if err := b.AddRollup(ro); err != nil {
				t.Fatalf("own rollup rejected: %v", err)
			}
		}
		rep2, err := b.Report(t0, now)
		if err != nil {
			t.Fatal(err)
		}
		var sent uint64
		for k, sr := range rep.Stats {
			sent += sr.Sent
			if sr.Sent != rep2.Stats[k].Sent || sr.Lost != rep2.Stats[k].Lost {
				t.Fatalf("raw and rollup counts differ: %+v vs %+v", sr, rep2.Stats[k])
			}
			for _, rl := range sr.Reliability {
				if rl.OK > rl.Sent || rl.Lower > rl.R+1e-12 || rl.Upper < rl.R-1e-12 {
					t.Fatalf("bad figure %+v", rl)
				}
			}
		}
		if sent != accepted {
			t.Fatalf("%d samples accepted, %d counted", accepted, sent)
		}
	})
}

// FuzzAddRollup: an arbitrary (possibly corrupt) rollup is either
// rejected or analysed without panic.
func FuzzAddRollup(f *testing.F) {
	f.Add(uint32(10), uint32(1), uint32(0), uint16(300), uint32(9), uint32(5), int64(20*ms), int64(60))
	f.Fuzz(func(t *testing.T, sent, lost, late uint32, bin uint16, n, within uint32, maxNs, minute int64) {
		a, _ := New(Config{}, streams("a/stamp"))
		th := a.ThresholdsNs()
		w := make([]uint32, len(th))
		w[0] = within
		ro := model.MonitorRollup{MinuteNs: minute * MinuteNs, Sent: sent, Lost: lost, Late: late,
			Bins: []model.RollupBin{{Bin: bin, N: n}}, MaxNs: maxNs, ThresholdsNs: th[:len(th)-1], Within: w[:len(th)-1],
			ByLoad: []model.RollupLoad{{Load: model.LoadState(bin % 9), Sent: sent, Lost: lost, Within: w[:len(th)-1]}}}
		if a.AddRollup(ro) != nil {
			return
		}
		if _, err := a.Report(0, 0); err != nil {
			t.Fatal(err)
		}
	})
}
