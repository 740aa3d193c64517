package store

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/model"
)

// crashChildEnv names the database a child process of TestCrashSafety writes.
const crashChildEnv = "SONDE_STORE_CRASH_CHILD"

const crashBatch = 100 // probes per batch in the crash test

// TestCrashChild is the writer TestCrashSafety kills: it writes batches
// of probes and prints "committed N" after the N-th commit. It runs only
// as that child.
func TestCrashChild(t *testing.T) {
	path := os.Getenv(crashChildEnv)
	if path == "" {
		t.Skip("only run as TestCrashSafety's child")
	}
	writeUntilKilled(t, path, Options{}, nil)
}

// writeUntilKilled writes batches of crashBatch probes to the store at
// url, calling after (if not nil) behind each, and prints "committed N"
// after the N-th: the body of a child a crash test kills.
func writeUntilKilled(t *testing.T, url string, opt Options, after func(s Store, mid int64, n int) error) {
	ctx := context.Background()
	s, err := Open(ctx, url, opt)
	if err != nil {
		t.Fatal(err)
	}
	mid, err := s.Monitor(ctx, Identity{Name: "crash"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Streams(ctx, mid, testStreams[:1]); err != nil {
		t.Fatal(err)
	}
	// Bounded: the parent kills it long before.
	deadline := time.Now().Add(60 * time.Second)
	for n := 0; n < 100_000 && time.Now().Before(deadline); n++ {
		if err := s.Write(ctx, mid, &Batch{Probes: probes(crashBatch, 0, t0+int64(n)*crashBatch*100e6)}); err != nil {
			t.Fatal(err)
		}
		if after != nil {
			if err := after(s, mid, n); err != nil {
				t.Fatal(err)
			}
		}
		fmt.Printf("committed %d\n", n+1)
	}
}

// TestCrashSafety: kill -9 of a writer loses at most the batch it had not
// committed; the database opens, passes integrity_check and holds every
// row committed before the kill.
func TestCrashSafety(t *testing.T) {
	path := filepath.Join(t.TempDir(), "crash.db")
	committed := killWriter(t, "TestCrashChild", crashChildEnv, path, 50)

	db, err := sql.Open(sqliteDriver, "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	var check string
	if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity_check after kill -9: %q, %v", check, err)
	}
	db.Close()
	s := open(t, path, Options{})
	ctx := context.Background()
	mid, err := s.Monitor(ctx, Identity{Name: "crash"})
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	if err := s.Probes(ctx, mid, 0, 1<<62, func(p model.ProbeSample) error { got = append(got, p.SentNs); return nil }); err != nil {
		t.Fatal(err)
	}
	// Every committed row is there, in order, with no gap; at most the
	// batches after the last one reported (written, not yet printed) more.
	if len(got) < committed*crashBatch {
		t.Fatalf("%d probes after kill -9, want at least the %d committed", len(got), committed*crashBatch)
	}
	for i, ns := range got {
		if ns != t0+int64(i)*100e6 {
			t.Fatalf("probe %d sent at %d, want %d: a committed row is missing", i, ns, t0+int64(i)*100e6)
		}
	}
	t.Logf("killed after %d reported commits; %d probes stored", committed, len(got))
}

// TestOldHistoryFile: a results database written by internal/history
// (before the store) opens as a store, its results intact.
func TestOldHistoryFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.db")
	db, err := sql.Open(sqliteDriver, "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE IF NOT EXISTS results (
	seq          INTEGER PRIMARY KEY AUTOINCREMENT,
	id           TEXT NOT NULL UNIQUE,
	start        TEXT NOT NULL,
	software     TEXT NOT NULL,
	download_bps REAL NOT NULL,
	upload_bps   REAL NOT NULL,
	idle_rtt_ms  REAL NOT NULL,
	loaded_rtt_ms REAL NOT NULL,
	errors       INTEGER NOT NULL,
	json         BLOB NOT NULL
)`); err != nil {
		t.Fatal(err)
	}
	id := result(0).ID
	if _, err := db.Exec(`INSERT INTO results (id, start, software, download_bps, upload_bps, idle_rtt_ms, loaded_rtt_ms, errors, json)
		VALUES (?, '2026-01-02T03:04:00Z', 'old', 1, 2, 3, 4, 0, '{"id":"x"}')`, id); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s := open(t, path, Options{})
	if raw, err := s.GetResult(context.Background(), id); err != nil || string(raw) != `{"id":"x"}` {
		t.Fatalf("old result: %s, %v", raw, err)
	}
}

// BenchmarkProbeRowBytes inserts 1 M probe rows (8 streams at 10/s, a
// realistic spread of RTT, lateness and loss) in one-second batches and
// reports the bytes one row takes on disk, its primary key included
// (B/row; the goal is under 50), and the insert rate.
func BenchmarkProbeRowBytes(b *testing.B) {
	const rows, streams, perBatch = 1_000_000, 8, 80
	for range b.N {
		b.StopTimer()
		st, mid := benchStore(b, filepath.Join(b.TempDir(), "size.db"), Options{}, streams)
		elapsed := benchWriteProbes(b, st, mid, rows, streams, perBatch)
		db := st.(*sqlStore).db
		var pages int64
		if err := db.QueryRow(`SELECT SUM(pgsize) FROM dbstat WHERE name = 'probes'`).Scan(&pages); err != nil {
			b.Fatalf("dbstat: %v", err)
		}
		st.Close()
		perRow := float64(pages) / rows
		b.ReportMetric(perRow, "B/row")
		b.ReportMetric(rows/elapsed.Seconds(), "rows/s")
		fmt.Fprintf(os.Stderr, "probe rows: %d, table with its key %d bytes: %.1f B/row; inserted at %.0f rows/s\n", rows, pages, perRow, rows/elapsed.Seconds())
	}
}

// benchStore opens the store at url for a benchmark, with the monitor
// "bench" and its streams STAMP streams.
func benchStore(b *testing.B, url string, opt Options, streams int) (Store, int64) {
	b.Helper()
	ctx := context.Background()
	st, err := Open(ctx, url, opt)
	if err != nil {
		b.Fatal(err)
	}
	mid, _ := st.Monitor(ctx, Identity{Name: "bench"})
	var ss []model.MonitorStream
	for i := range streams {
		ss = append(ss, model.MonitorStream{Target: fmt.Sprintf("198.18.0.%d:862", i+2), Kind: model.ProbeSTAMP, Name: fmt.Sprint(i)})
	}
	if _, err := st.Streams(ctx, mid, ss); err != nil {
		b.Fatal(err)
	}
	return st, mid
}

// benchWriteProbes writes rows of benchProbes in batches of perBatch,
// timed (the timer runs only during it), and returns how long they took.
func benchWriteProbes(b *testing.B, st Store, mid int64, rows, streams, perBatch int) time.Duration {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	batch := &Batch{Probes: make([]model.ProbeSample, perBatch)}
	b.StartTimer()
	start := time.Now()
	for n := 0; n < rows/perBatch; n++ {
		benchProbes(rng, batch.Probes, n, streams)
		if err := st.Write(ctx, mid, batch); err != nil {
			b.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	return elapsed
}

// benchProbes fills ps with the n-th one-second batch of the benchmarks'
// probes: streams at 10/s, a realistic spread of RTT, lateness and loss.
func benchProbes(rng *rand.Rand, ps []model.ProbeSample, n, streams int) {
	for i := range ps {
		k := n*len(ps) + i
		p := model.ProbeSample{Stream: int32(i % streams), Seq: uint32(k / streams), SentNs: t0 + int64(k/streams)*100e6 + rng.Int64N(50e3),
			LatenessNs: int64(rng.IntN(80e3)), RTTNs: 19e6 + rng.Int64N(5e6), Load: model.LoadIdle}
		p.FwdNs = p.RTTNs/2 + rng.Int64N(1e6)
		p.RevNs = p.RTTNs - p.FwdNs
		if rng.IntN(100) == 0 {
			p.RTTNs, p.FwdNs, p.RevNs, p.Lost = -1, 0, 0, true
		}
		ps[i] = p
	}
}

// killWriter runs this test binary's test child with env set to val,
// reads its "committed N" lines until N reaches want, kills it with
// SIGKILL and returns N (failing when it ended before).
func killWriter(t *testing.T, child, env, val string, want int) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+child+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env+"="+val)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	committed := 0
	for committed < want && sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "committed "); ok {
			committed, _ = strconv.Atoi(v)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if committed < want {
		t.Fatalf("the writer committed only %d batches before it ended", committed)
	}
	return committed
}
