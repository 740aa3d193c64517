package fleet

import (
	"context"
	"fmt"

	"github.com/sonde-project/sonde/internal/store"
)

// aggregateBatch is how many marked hours one DirtyHours call returns.
const aggregateBatch = 1000

// Aggregate merges the store's marked hours (those whose minute rollups
// changed since they were merged) into the hourly aggregate, oldest
// first, at most maxHours of them (≤ 0: until none is left), each in its
// own transaction; it returns how many it merged. A report is exact
// whether or not it has run: it reads minute rollups for marked hours.
func Aggregate(ctx context.Context, st store.Fleet, maxHours int) (int, error) {
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
		for _, h := range hours {
			if err := st.MergeHour(ctx, h, func(mins []store.Rollup) (store.HourRow, error) { return MergeHour(h.HourNs, mins) }); err != nil {
				return done, fmt.Errorf("fleet: aggregate: %w", err)
			}
			done++
		}
		if len(hours) < n {
			break
		}
	}
	return done, nil
}
