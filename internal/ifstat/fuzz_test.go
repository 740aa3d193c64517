package ifstat

import (
	"encoding/binary"
	"strconv"
	"testing"

	"github.com/sonde-project/sonde/internal/model"
)

// FuzzReconcile feeds arbitrary raw readings and read spacings to the
// counter reconciliation and the Tracker: the counts never go down, no
// reading adds more than the link could carry since the counter last
// changed, the samples stay ordered and every label is a known state.
func FuzzReconcile(f *testing.F) {
	rec := func(vals ...uint64) []byte {
		var b []byte
		for i := 0; i+2 < len(vals); i += 3 {
			b = binary.LittleEndian.AppendUint16(b, uint16(vals[i]))
			b = binary.LittleEndian.AppendUint64(b, vals[i+1])
			b = binary.LittleEndian.AppendUint64(b, vals[i+2])
		}
		return b
	}
	f.Add(rec(100, 1<<32-5000, 10, 100, 3000, 20, 100, 9000, 30))                // 32-bit wrap
	f.Add(rec(100, 5_000_000_000, 1e6, 100, 100, 50, 100, 200_000, 90))          // reset
	f.Add(rec(100, 0, 0, 100, 1<<63, 1<<62, 100, 1, 1))                          // jump, then fall
	f.Add(rec(100, 7, 7, 100, 7, 7, 100, 7, 7, 1000, 90_000, 7, 100, 90_000, 7)) // stale
	f.Add(rec(65535, 3, 3, 0, 3, 3, 100, 2, 2))                                  // gap, clock standing still
	f.Fuzz(func(t *testing.T, data []byte) {
		const maxBps = 1e9
		var c counter
		tr, err := NewTracker(Config{UpBps: 10e6, DownBps: 20e6, MaxBps: maxBps, Keep: 10e9})
		if err != nil {
			t.Fatal(err)
		}
		now := int64(1e18)
		for n := 0; len(data) >= 18 && n < 2000; n++ {
			step := int64(binary.LittleEndian.Uint16(data)) * 1e6 // 0–65 s in ms
			rx := binary.LittleEndian.Uint64(data[2:])
			tx := binary.LittleEndian.Uint64(data[10:])
			data = data[18:]
			now += step
			before, changed := c.total, c.changedNs
			d, _ := c.update(rx, now, maxBps)
			if n > 0 && (c.total != before+d || c.total < before) {
				t.Fatalf("count went from %d to %d adding %d", before, c.total, d)
			}
			if n > 0 && d > plausibleBytes(maxBps, now-changed) {
				t.Fatalf("added %d bytes in %d ns: more than %g bit/s carries", d, now-changed, maxBps)
			}
			s := tr.Observe(now, rx, tx)
			if s.TimeNs != now {
				t.Fatalf("sample time %d; want %d", s.TimeNs, now)
			}
			st := tr.Classify(now)
			if st > model.LoadBoth {
				t.Fatalf("state %d", st)
			}
			if n%50 == 0 {
				ss := tr.Samples(0, nil)
				for i := 1; i < len(ss); i++ {
					if ss[i].TimeNs <= ss[i-1].TimeNs || ss[i].RxBytes < ss[i-1].RxBytes || ss[i].TxBytes < ss[i-1].TxBytes {
						t.Fatalf("samples out of order: %+v then %+v", ss[i-1], ss[i])
					}
				}
			}
		}
	})
}

// FuzzParseCounter checks the sysfs counter parser against strconv.
func FuzzParseCounter(f *testing.F) {
	for _, s := range []string{"0\n", "123456789\n", "18446744073709551615\n", "18446744073709551616\n", "-1\n", "", "\n", "12 3", "007"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, ok := parseCounter(b)
		s := string(b)
		if len(s) > 0 && s[len(s)-1] == '\n' {
			s = s[:len(s)-1]
		}
		w, err := strconv.ParseUint(s, 10, 64)
		digits := len(s) > 0 && len(s) <= 20
		for _, c := range s {
			digits = digits && c >= '0' && c <= '9'
		}
		want := err == nil && digits
		if ok != want || (ok && v != w) {
			t.Fatalf("parseCounter(%q) = %d, %v; strconv %d, %v", b, v, ok, w, err)
		}
	})
}
