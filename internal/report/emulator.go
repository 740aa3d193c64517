//go:build !monitoronly

package report

import (
	"io"

	"github.com/sonde-project/sonde/internal/emulator"
)

// EmulatorDirection is one direction's counters of an emulated link, as
// `sonde emulate` reports them.
type EmulatorDirection struct {
	Name string // up, down
	emulator.Counters
	WriteErrors uint64 // packets the forwarder could not write out
}

// WriteEmulatorStats writes the emulated link's counters, a row per
// direction: packets and bytes in and out, the drops by cause (random
// loss, queue limit, AQM, MTU), ECN marks, duplicates, the backlog and
// the forwarder's write errors.
func WriteEmulatorStats(w io.Writer, dirs []EmulatorDirection) error {
	t := table{right: []bool{false, true, true, true, true, true, true, true, true, true, true, true, true, true}}
	t.row("DIR", "IN PKTS", "IN B", "OUT PKTS", "OUT B", "LOSS", "QUEUE", "AQM", "MTU", "MARKED", "DUP", "BACKLOG PKTS", "BACKLOG B", "WRITE ERRS")
	for _, d := range dirs {
		c := d.Counters
		t.row(d.Name, num(c.Arrived), num(c.BytesIn), num(c.Delivered), num(c.BytesOut), num(c.DropLoss), num(c.DropQueue), num(c.DropAQM),
			num(c.DropMTU), num(c.Marked), num(c.Duplicated), num(c.BacklogPkts), num(c.BacklogBytes), num(d.WriteErrors))
	}
	return t.write(w)
}
