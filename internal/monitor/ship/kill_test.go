package ship

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/store"
)

// TestShipKill: a shipper in a child process is killed (SIGKILL) while it
// ships, twice, wherever it is (inside a fleet transaction, between the
// commit and the watermark, …); shipping again from the same local store
// leaves the fleet store with exactly the local rows.
func TestShipKill(t *testing.T) {
	f := newFleet(t, "home")
	l := newLocal(t, "home")
	l.add(t, 0, 150)
	path := l.st.Location().Path
	fid := int64(0)
	for kill := range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestShipKillChild$")
		cmd.Env = append(os.Environ(), "SONDE_SHIP_CHILD="+path, "SONDE_SHIP_FLEET="+f.url, "SONDE_SHIP_TOKEN="+f.token,
			"SONDE_SHIP_MONITOR="+strconv.FormatInt(l.mid, 10))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Kill once the fleet store has some of this round's rows.
		want := (kill + 1) * 5000
		deadline := time.Now().Add(30 * time.Second)
		n := 0
		for time.Now().Before(deadline) {
			if fid == 0 {
				fid = f.monitorID(t, "home")
			}
			n = 0
			_ = f.st.Probes(context.Background(), fid, 0, 1<<62, func(model.ProbeSample) error { n++; return nil })
			if n >= want {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if n < want || n >= 150*240 {
			t.Fatalf("round %d: killed with %d probes shipped, want between %d and all", kill, n, want)
		}
	}
	s := newShipper(t, l, Config{URL: f.url, Token: f.token, Raw: true, MaxRows: 500})
	drain(t, s)
	want := countRows(t, l.st, l.mid)
	if got := countRows(t, f.st, fid); got != want {
		t.Fatalf("after two kills: fleet %+v, local %+v", got, want)
	}
}

// TestShipKillChild is the shipper TestShipKill kills: it ships in small
// shipments until killed.
func TestShipKillChild(t *testing.T) {
	path := os.Getenv("SONDE_SHIP_CHILD")
	if path == "" {
		t.Skip("run by TestShipKill")
	}
	ctx := context.Background()
	st, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mid, _ := strconv.ParseInt(os.Getenv("SONDE_SHIP_MONITOR"), 10, 64)
	s, err := New(ctx, st, Config{URL: os.Getenv("SONDE_SHIP_FLEET"), Token: os.Getenv("SONDE_SHIP_TOKEN"), Name: "home", Monitor: mid, Raw: true, MaxRows: 500})
	if err != nil {
		t.Fatal(err)
	}
	for range 10_000 { // killed long before
		if _, err := s.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
}
