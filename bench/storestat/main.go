// Command storestat prints what bench/monitor_soak.sh reads of a monitor's
// store where sqlite3 cannot read it (a journal: the monitor build's):
// the probes and the rollups stored, and the send-schedule lateness of the
// probes not late (p50, p99, max in µs, nearest rank, as the script's
// SQL), on one line.
//
//	go run ./bench/storestat journal:DIR
package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/store"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: storestat STORE-URL")
		os.Exit(2)
	}
	loc, err := store.ParseURL(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx := context.Background()
	st, err := store.OpenExisting(ctx, loc)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer st.Close()
	ms, err := st.ListMonitors(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	n, rollups := 0, 0
	var lat []int64
	for _, id := range ms {
		if err := st.Probes(ctx, id, math.MinInt64, math.MaxInt64, func(p model.ProbeSample) error {
			n++
			if !p.Late {
				lat = append(lat, p.LatenessNs)
			}
			return nil
		}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if err := st.Rollups(ctx, id, math.MinInt64, math.MaxInt64, func(store.Rollup) error { rollups++; return nil }); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	if len(lat) == 0 {
		fmt.Println(n, rollups)
		return
	}
	slices.Sort(lat)
	rank := func(k int) float64 { return float64(lat[min(k, len(lat))-1]) / 1e3 }
	fmt.Printf("%d %d %.1f %.1f %.1f\n", n, rollups, rank((len(lat)+1)/2), rank((len(lat)*99+99)/100), rank(len(lat)))
}
