package labtest

import (
	"fmt"
	"slices"
	"time"

	"github.com/sonde-project/sonde/internal/emulator"
)

// MaxLateness is the lab forwarder's p99 lateness (write time − due time,
// over the delivered packets) beyond which the host counts as overloaded:
// the forwarder, on the same shared cores as the endpoints, then holds
// packets for tens of ms and releases them at once, which no real link of
// the configured rate would do, and the endpoints' kernels answer as
// late. (A few ms at p99 are common on a 2-core VM and harmless: the
// truth records the real write times.) A lab test that gets a figure the
// configured path does not give skips, with the figure, beyond it.
const MaxLateness = 10 * time.Millisecond

// Lateness reads a lab's truth file (written out when the lab is down)
// and returns the median and p99 of the forwarder's lateness over the
// delivered packets, and how many were delivered (0: both are 0).
func Lateness(truthPath string) (p50, p99 time.Duration, delivered int, err error) {
	_, recs, err := emulator.ReadTruthFile(truthPath)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("lab truth: %w", err)
	}
	var late []time.Duration
	for _, rec := range recs {
		if rec.Fate == emulator.Delivered {
			late = append(late, rec.Lateness())
		}
	}
	if len(late) == 0 {
		return 0, 0, 0, nil
	}
	slices.Sort(late)
	return late[len(late)/2], late[len(late)*99/100], len(late), nil
}
