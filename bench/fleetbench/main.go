// Command fleetbench is the fleet's scale bench (bench/fleet.sh, issue
// 15): it simulates monitors × targets writing 1-minute rollups (realistic
// data blobs from the reliability package's Roller) into a store through
// the store's Write path, the one monitors and their shipper use, then
// prints the ingest rate, the database size per monitor-day, the time of
// the hourly aggregate job and of the fleet report over the whole range.
//
// With -hour-days N it also writes N earlier days of the hourly
// aggregate directly (rows as the job would make them from the same
// minutes), so a report over a month can be timed without ingesting 172.8
// million minute rows; what was written which way is printed. With
// -data json the minutes carry the JSON data older sonde versions wrote,
// to compare it with the store's binary encoding.
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/sonde-project/sonde/internal/fleet"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/reliability"
	"github.com/sonde-project/sonde/internal/store"
	"github.com/sonde-project/sonde/internal/units"
)

const (
	minuteNs = int64(60e9)
	hourNs   = store.HourNs
	dayNs    = 24 * hourNs
)

func main() {
	var (
		url       = flag.String("store", "", "store URL (postgres://… or a SQLite path)")
		monitors  = flag.Int("monitors", 1000, "monitors")
		targets   = flag.Int("targets", 4, "targets (streams) per monitor")
		days      = flag.Float64("days", 1, "days of minute rollups to write")
		hourDays  = flag.Int("hour-days", 0, "earlier days of hourly aggregate rows written directly")
		batchMin  = flag.Int("batch-minutes", 60, "minutes per Write batch (× targets rows)")
		writers   = flag.Int("writers", 4, "concurrent writers")
		skipAgg   = flag.Bool("no-aggregate", false, "do not run the aggregate job")
		reportRaw = flag.Bool("report-before-aggregate", false, "also time the report before the aggregate job (reads every minute rollup)")
		seed      = flag.Uint64("seed", 1, "random seed")
		compr     = flag.String("compression", "", "PostgreSQL: set the rollups' data column's `METHOD` (pglz, lz4) before ingest (default: the server's, pglz)")
		only      = flag.Bool("report-only", false, "only time the report over the days the other flags name, on a store an earlier run filled")
		prof      = flag.String("cpuprofile", "", "write a CPU profile of the aggregate job and the report to `FILE`")
		encoding  = flag.String("data", "binary", "the minute rollups' data `ENCODING`: binary (the store's) or json (what sonde wrote before version 2, still read), to compare the two")
	)
	flag.Parse()
	if *url == "" || *monitors < 1 || *monitors > 100_000 || *targets < 1 || *targets > 64 || *days <= 0 || *days > 31 ||
		*hourDays < 0 || *hourDays > 400 || *batchMin < 1 || *batchMin > 1440 || *writers < 1 || *writers > 64 {
		fmt.Fprintln(os.Stderr, "fleetbench: -store is required; monitors 1–100000, targets 1–64, days (0, 31], hour-days 0–400, batch-minutes 1–1440, writers 1–64")
		os.Exit(2)
	}
	if *encoding != "binary" && *encoding != "json" {
		fmt.Fprintf(os.Stderr, "fleetbench: -data %q: want binary or json\n", *encoding)
		os.Exit(2)
	}
	if err := run(*url, *monitors, *targets, *days, *hourDays, *batchMin, *writers, !*skipAgg, *reportRaw, *seed, *prof, *compr, *only, *encoding == "json"); err != nil {
		fmt.Fprintln(os.Stderr, "fleetbench:", err)
		os.Exit(1)
	}
}

var isps = []string{"acme", "bravo", "civic", "delta", "echo", "fibre", "gamma", "hotel", "indigo", "juliet"}

func run(url string, nMon, nTgt int, days float64, hourDays, batchMin, writers int, aggregate, reportRaw bool, seed uint64, profile, compression string, reportOnly, jsonData bool) error {
	ctx := context.Background()
	st, err := store.Open(ctx, url, store.Options{})
	if err != nil {
		return err
	}
	defer st.Close()
	var f store.FleetReader = st

	// The range ends at the last whole hour, so `fleet report --since`
	// from the command line covers it too.
	end := time.Now().UTC().Truncate(time.Hour).UnixNano()
	minutes := int(days * 24 * 60)
	start := end - int64(minutes)*minuteNs
	hourStart := units.FloorTo(start, hourNs) - int64(hourDays)*dayNs
	fmt.Printf("fleet bench: %d monitors × %d targets, %d minutes (%.2f days) of 1-minute rollups from %s to %s",
		nMon, nTgt, minutes, days, iso(start), iso(end))
	if hourDays > 0 {
		fmt.Printf(", and %d earlier days of hourly aggregate rows from %s", hourDays, iso(hourStart))
	}
	fmt.Printf("\nstore: %s; %d writers, batches of %d minutes × %d targets = %d rows\n", st.Location(), writers, batchMin, nTgt, batchMin*nTgt)

	if reportOnly {
		if profile != "" {
			pf, err := os.Create(profile)
			if err != nil {
				return err
			}
			if err := pprof.StartCPUProfile(pf); err != nil {
				return err
			}
			defer pprof.StopCPUProfile()
		}
		return timeReport(ctx, f, "REPORT", hourStart, end)
	}
	if compression != "" {
		if compression != "pglz" && compression != "lz4" {
			return fmt.Errorf("-compression %q: want pglz or lz4", compression)
		}
		db, err := sql.Open("pgx", url)
		if err != nil {
			return err
		}
		_, err = db.ExecContext(ctx, "ALTER TABLE rollups ALTER COLUMN data SET COMPRESSION "+compression)
		db.Close()
		if err != nil {
			return fmt.Errorf("set compression: %w", err)
		}
		fmt.Printf("rollups.data compression: %s\n", compression)
	}
	pool, err := minutePool(seed, jsonData)
	if err != nil {
		return err
	}
	var blob, nblob int
	for _, g := range pool {
		for _, r := range g {
			blob += len(r.Data)
			nblob++
		}
	}
	enc := "the store's binary encoding of the Roller's bins and counts"
	if jsonData {
		enc = "the JSON of the Roller's bins and counts, as stores before the binary encoding hold it"
	}
	fmt.Printf("minute rollup data: %d bytes on average (%s)\n", blob/nblob, enc)

	// Register monitors and streams.
	ids := make([]int64, nMon)
	streams := make([]model.MonitorStream, nTgt)
	for t := range streams {
		streams[t] = model.MonitorStream{Name: fmt.Sprintf("stamp t%d", t), Target: fmt.Sprintf("t%d.example.net:862", t), Kind: model.ProbeSTAMP}
	}
	t0 := time.Now()
	for m := range nMon {
		id, err := st.Monitor(ctx, store.Identity{Name: fmt.Sprintf("home-%05d", m), Labels: map[string]string{
			"isp": isps[m%len(isps)], "region": fmt.Sprintf("r%d", m/100%8), "access": []string{"dsl", "cable", "fibre"}[m%3]}})
		if err != nil {
			return err
		}
		if _, err := st.Streams(ctx, id, streams); err != nil {
			return err
		}
		ids[m] = id
	}
	fmt.Printf("registered %d monitors in %s\n", nMon, time.Since(t0).Round(time.Millisecond))

	// Ingest: time-major (batch window by batch window, every monitor),
	// as a live fleet writes; writers take monitors in turn.
	var rows atomic.Int64
	t0 = time.Now()
	for w0 := 0; w0 < minutes; w0 += batchMin {
		w1 := min(w0+batchMin, minutes)
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		next := atomic.Int64{}
		for range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					m := int(next.Add(1) - 1)
					if m >= nMon {
						return
					}
					b := &store.Batch{}
					rng := rand.New(rand.NewPCG(seed, uint64(m)<<20|uint64(w0)))
					for t := range nTgt {
						for k := w0; k < w1; k++ {
							g := pool[m%len(pool)]
							r := g[rng.IntN(len(g))]
							r.Stream, r.MinuteNs = int32(t), start+int64(k)*minuteNs
							b.Rollups = append(b.Rollups, r)
						}
					}
					b.Events = outages(m, start+int64(w0)*minuteNs, start+int64(w1)*minuteNs, rng)
					if err := st.Write(ctx, ids[m], b); err != nil {
						errs <- err
						return
					}
					rows.Add(int64(len(b.Rollups)))
				}
			}()
		}
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			return err
		}
	}
	el := time.Since(t0)
	fmt.Printf("INGEST: %d minute rollups in %s: %.0f rows/s (goal ≥ 50,000)\n", rows.Load(), el.Round(time.Millisecond), float64(rows.Load())/el.Seconds())

	var db *sql.DB
	if strings.HasPrefix(url, "postgres") {
		if db, err = sql.Open("pgx", url); err != nil {
			return err
		}
		defer db.Close()
		if _, err := db.ExecContext(ctx, "VACUUM ANALYZE"); err != nil {
			return err
		}
		var total, roll int64
		// rollups is partitioned by day: its size is its partitions'.
		if err := db.QueryRowContext(ctx, `SELECT pg_database_size(current_database()), (SELECT COALESCE(SUM(pg_total_relation_size(relid)), 0) FROM pg_partition_tree('rollups'))`).Scan(&total, &roll); err != nil {
			return err
		}
		md := float64(nMon) * float64(minutes) / 1440
		fmt.Printf("SIZE: rollups table with its key %.1f MiB = %.0f bytes per row, %.2f MiB per monitor-day (%d targets); whole database %.1f MiB\n",
			mib(roll), float64(roll)/float64(rows.Load()), mib(roll)/md, nTgt, mib(total))
	}

	if reportRaw {
		if err := timeReport(ctx, f, "REPORT (before the aggregate job: every minute rollup)", start, end); err != nil {
			return err
		}
	}
	if profile != "" {
		pf, err := os.Create(profile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(pf); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if aggregate {
		t0 = time.Now()
		n, err := fleet.Aggregate(ctx, f, 0)
		if err != nil {
			return err
		}
		el := time.Since(t0)
		fmt.Printf("AGGREGATE: merged %d stream-hours (%d minute rollups) in %s: %.0f minute rows/s\n", n, rows.Load(), el.Round(time.Millisecond), float64(rows.Load())/el.Seconds())
	}
	if hourDays > 0 {
		if db == nil {
			return fmt.Errorf("-hour-days needs PostgreSQL")
		}
		if err := writeHours(ctx, db, ids, nTgt, hourStart, units.FloorTo(start, hourNs), pool, seed); err != nil {
			return err
		}
		if _, err := db.ExecContext(ctx, "VACUUM ANALYZE rollup_hours"); err != nil {
			return err
		}
	}
	if db != nil {
		var hours int64
		if err := db.QueryRowContext(ctx, `SELECT pg_total_relation_size('rollup_hours')`).Scan(&hours); err != nil {
			return err
		}
		fmt.Printf("SIZE: rollup_hours with its key %.1f MiB\n", mib(hours))
	}
	return timeReport(ctx, f, "REPORT", hourStart, end)
}

func timeReport(ctx context.Context, f store.FleetReader, what string, from, to int64) error {
	t0 := time.Now()
	rep, err := fleet.Report(ctx, f, fleet.Request{FromNs: from, ToNs: to})
	if err != nil {
		return err
	}
	el := time.Since(t0)
	fail := 0
	for _, m := range rep.Monitors {
		for _, v := range m.Verdicts {
			if v.Verdict == model.VerdictFail {
				fail++
				break
			}
		}
	}
	fmt.Printf("%s over %.1f days: %s (%s); %d monitors, %d failing a profile, %d upstream events\n",
		what, float64(to-from)/float64(dayNs), el.Round(time.Millisecond), rep.Source, len(rep.Monitors), fail, len(rep.Upstream))
	return nil
}

// poolGroups monitors' paths (base RTTs) and poolVariants minutes of each.
const (
	poolGroups   = 32
	poolVariants = 8
)

// minutePool makes realistic minute rollups with the daemon's Roller and
// thresholds, poolVariants for each of poolGroups paths (monitor m takes
// path m mod poolGroups, so its hours merge minutes of one path): 600
// probes (10/s), a base RTT of 8 to 60 ms by path with 10 % jitter, a
// loaded minute in eight (added delay up to 400 ms), loss up to 0.1 %,
// on one path in four up to 5 %.
//
// With jsonData the data is the JSON older sonde versions wrote (what
// stores made before the binary encoding hold), to compare the two.
func minutePool(seed uint64, jsonData bool) ([][]store.Rollup, error) {
	an, err := reliability.New(reliability.Config{}, nil)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(seed, 99))
	var out []store.Rollup
	var ferr error
	r := reliability.NewRoller(an.ThresholdsNs(), func(m model.MonitorRollup) {
		sr, err := store.RollupFrom(m)
		if err == nil && jsonData {
			sr.Data, err = json.Marshal(oldRollupData{m.Bins, m.FwdBins, m.RevBins, m.ThresholdsNs, m.Within, m.ByLoad})
		}
		if err != nil && ferr == nil {
			ferr = err
		}
		out = append(out, sr)
	})
	for k := range poolGroups * poolVariants {
		base := 8e6 + float64(k/poolVariants)*52e6/poolGroups
		loaded := rng.IntN(8) == 0
		// One path in four is lossy: the fleet has good and bad lines.
		lossP := []float64{0, 0, 0, 0.0005, 0.001}[rng.IntN(5)]
		if k/poolVariants%4 == 0 {
			lossP = []float64{0, 0.001, 0.005, 0.02, 0.05}[rng.IntN(5)]
		}
		for i := range 600 {
			p := model.ProbeSample{SentNs: int64(k)*minuteNs + int64(i)*100e6, Seq: uint32(k*600 + i), Load: model.LoadIdle}
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
				return nil, err
			}
		}
	}
	r.Flush()
	groups := make([][]store.Rollup, poolGroups)
	for i, m := range out {
		groups[i/poolVariants] = append(groups[i/poolVariants], m)
	}
	return groups, ferr
}

// oldRollupData is the JSON of a minute's data before version 2.
type oldRollupData struct {
	Bins         []model.RollupBin  `json:"bins"`
	FwdBins      []model.RollupBin  `json:"fwd_bins,omitempty"`
	RevBins      []model.RollupBin  `json:"rev_bins,omitempty"`
	ThresholdsNs []int64            `json:"thresholds_ns"`
	Within       []uint32           `json:"within"`
	ByLoad       []model.RollupLoad `json:"by_load,omitempty"`
}

// outages are a monitor's stored outage events in [from, to): about one
// line outage a day per monitor, and every 6 hours an upstream one shared
// by all the monitors of one ISP.
func outages(m int, from, to int64, rng *rand.Rand) []model.MonitorEvent {
	var evs []model.MonitorEvent
	if rng.Float64() < float64(to-from)/float64(dayNs) {
		s := from + rng.Int64N(max(to-from, 1))
		evs = append(evs, model.MonitorEvent{Kind: model.EventOutage, StartNs: s, EndNs: s + int64(1+rng.IntN(10))*minuteNs, Stream: -1, Text: "outage of the link", Flags: []string{"link"}})
	}
	for h := units.FloorTo(from, 6*hourNs); h < to; h += 6 * hourNs {
		if h < from || int(h/(6*hourNs))%len(isps) != m%len(isps) {
			continue
		}
		evs = append(evs, model.MonitorEvent{Kind: model.EventOutage, StartNs: h + 17*minuteNs, EndNs: h + 21*minuteNs, Stream: -1, Text: "outage of the link", Flags: []string{"link"}})
	}
	return evs
}

// writeHours writes hourly aggregate rows for [from, to) directly: each
// merged by fleet.MergeHour from 60 minutes of the monitor's path in the
// pool, as the job makes them.
func writeHours(ctx context.Context, db *sql.DB, ids []int64, nTgt int, from, to int64, pool [][]store.Rollup, seed uint64) error {
	rng := rand.New(rand.NewPCG(seed, 7))
	hp := make([][]store.HourRow, len(pool))
	for g := range hp {
		for range 4 {
			mins := make([]store.Rollup, 60)
			for k := range mins {
				mins[k] = pool[g][rng.IntN(len(pool[g]))]
				mins[k].MinuteNs = int64(k) * minuteNs
			}
			h, err := fleet.MergeHour(0, mins)
			if err != nil {
				return err
			}
			hp[g] = append(hp[g], h)
		}
	}
	sids := map[int64][]int64{}
	rows, err := db.QueryContext(ctx, `SELECT id, monitor_id FROM streams ORDER BY id`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var id, mid int64
		if err := rows.Scan(&id, &mid); err != nil {
			return err
		}
		sids[mid] = append(sids[mid], id)
	}
	rows.Close()
	t0 := time.Now()
	var n int64
	const chunk = 500
	var args []any
	flush := func() error {
		if len(args) == 0 {
			return nil
		}
		var b strings.Builder
		b.WriteString("INSERT INTO rollup_hours (sid, hour_ns, minutes, sent, lost, late, sum_ns, sum_sq_ns, min_ns, max_ns, data) VALUES ")
		for i := 0; i < len(args)/11; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "($%d,$%d,$%d,$%d,$%d,$%d,$%d,$%d,$%d,$%d,$%d)", i*11+1, i*11+2, i*11+3, i*11+4, i*11+5, i*11+6, i*11+7, i*11+8, i*11+9, i*11+10, i*11+11)
		}
		b.WriteString(" ON CONFLICT DO NOTHING")
		_, err := db.ExecContext(ctx, b.String(), args...)
		args = args[:0]
		return err
	}
	for h := from; h < to; h += hourNs {
		for m, id := range ids {
			for _, sid := range sids[id] {
				g := hp[m%len(hp)]
				r := g[rng.IntN(len(g))]
				args = append(args, sid, h, r.Minutes, int64(r.Sent), int64(r.Lost), int64(r.Late), r.SumNs, r.SumSqNs, r.MinNs, r.MaxNs, r.Data)
				n++
				if len(args) >= chunk*11 {
					if err := flush(); err != nil {
						return err
					}
				}
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	el := time.Since(t0)
	fmt.Printf("HOURS: wrote %d hourly aggregate rows directly (%d days before the minutes) in %s\n", n, (to-from)/dayNs, el.Round(time.Millisecond))
	return nil
}

func iso(ns int64) string { return time.Unix(0, ns).UTC().Format("2006-01-02T15:04Z") }

func mib(b int64) float64 { return float64(b) / (1 << 20) }
