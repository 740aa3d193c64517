package fleet

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sonde-project/sonde/internal/store"
)

// aggregateBatch is how many marked hours one DirtyHours call returns;
// aggregateWorkers how many transactions merge at once.
const (
	aggregateBatch   = 4000
	aggregateWorkers = 2
)

// Aggregate merges the store's marked hours (those whose minute rollups
// changed since they were merged) into the hourly aggregate, oldest
// first, at most maxHours of them (≤ 0: until none is left), each in its
// own transaction; it returns how many it merged. A report is exact
// whether or not it has run: it reads minute rollups for marked hours.
func Aggregate(ctx context.Context, st store.FleetReader, maxHours int) (int, error) {
	done := 0
	for maxHours <= 0 || done < maxHours {
		n := aggregateBatch
		if maxHours > 0 {
			n = min(n, maxHours-done)
		}
		hours, err := st.DirtyHours(ctx, n)
		if err != nil {
			return done, err
		}
		if len(hours) == 0 {
			break
		}
		// Marks come oldest hour first: one transaction per hour's run of
		// streams, two at a time (the decoding of the minutes' JSON is
		// most of the work and wants both cores).
		type job struct {
			h    int64
			sids []int32
		}
		var jobs []job
		for i := 0; i < len(hours); {
			j := job{h: hours[i].HourNs}
			for ; i < len(hours) && hours[i].HourNs == j.h && len(j.sids) < store.MaxMergeStreams/4; i++ {
				j.sids = append(j.sids, hours[i].Stream)
			}
			jobs = append(jobs, j)
		}
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			errs []error
			next atomic.Int64
		)
		for range aggregateWorkers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					k := int(next.Add(1) - 1)
					if k >= len(jobs) {
						return
					}
					j := jobs[k]
					err := st.MergeHours(ctx, j.h, j.sids, func(mins []store.Rollup) (store.HourRow, error) { return MergeHour(j.h, mins) })
					mu.Lock()
					if err != nil {
						errs = append(errs, err)
					} else {
						done += len(j.sids)
					}
					mu.Unlock()
					if err != nil {
						return
					}
				}
			}()
		}
		wg.Wait()
		if len(errs) > 0 {
			return done, fmt.Errorf("fleet: aggregate: %w", errs[0])
		}
		if len(hours) < n {
			break
		}
	}
	return done, nil
}

// AggregateWithin is `fleet aggregate`: the store at loc opened, Aggregate
// run within timeout (store.Within), the store closed.
func AggregateWithin(ctx context.Context, loc store.Location, maxHours int, timeout time.Duration) (n int, err error) {
	err = store.Within(ctx, loc, true, timeout, "aggregating", func(ctx context.Context, st store.Store) (err error) {
		n, err = Aggregate(ctx, st, maxHours)
		return err
	})
	return n, err
}
