package httpload

import (
	"net"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/protocol"
)

// TestFlowsBoundAndCounts: a test records one flow per connection and
// direction up to its bound, counts the others, and an upload flow's
// receive counts rise to its bytes at its end.
func TestFlowsBoundAndCounts(t *testing.T) {
	fs := flows{ref: time.Now(), max: 2}
	var conns []net.Conn
	for range 3 {
		a, b := net.Pipe()
		defer a.Close()
		defer b.Close()
		conns = append(conns, a)
	}
	up := fs.get(conns[0], false)
	if fs.get(conns[0], false) != up {
		t.Fatal("a connection's upload is one flow")
	}
	down := fs.get(conns[1], true)
	if fs.get(conns[2], true) != nil || fs.get(conns[2], false) != nil {
		t.Fatal("flows past the bound are recorded")
	}
	for range 3 {
		up.moved(fs.ref, 1000)
		down.moved(fs.ref, 500)
		time.Sleep(sampleInterval + 5*time.Millisecond)
	}
	up.moved(fs.ref, 1) // within the interval: no count of its own
	reps, unrecorded := fs.reports(protocol.LimitDuration)
	if len(reps) != 2 || unrecorded != 2 {
		t.Fatalf("%d reports, %d unrecorded", len(reps), unrecorded)
	}
	u, d := reps[0], reps[1]
	if u.Kind != protocol.KindUpload || u.Bytes != 3001 || d.Kind != protocol.KindDownload || d.Bytes != 1500 || u.Limit != protocol.LimitDuration {
		t.Fatalf("reports %+v %+v", u, d)
	}
	if n := len(u.Counts); n < 4 || u.Counts[0].Bytes != 0 || u.Counts[n-1].Bytes != 3001 || u.Counts[n-1].TS != u.EndS {
		t.Fatalf("upload counts %+v (end %v)", u.Counts, u.EndS)
	}
	for i := 1; i < len(u.Counts); i++ {
		if u.Counts[i].TS < u.Counts[i-1].TS || u.Counts[i].Bytes < u.Counts[i-1].Bytes {
			t.Fatalf("counts go back: %+v", u.Counts)
		}
	}
	if d.Counts != nil || d.EndS < d.StartS {
		t.Fatalf("download %+v", d)
	}
}
