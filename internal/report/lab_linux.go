//go:build !monitoronly

package report

import (
	"io"
	"strconv"
	"time"

	"github.com/sonde-project/sonde/internal/lab"
)

// WriteLabList writes `sonde lab list`: a row per recorded lab, with
// whether its forwarding process still runs.
func WriteLabList(w io.Writer, states []lab.State) error {
	var t table
	t.row("ID", "PROFILE", "PID", "STATE", "STARTED", "CLIENT", "SERVER")
	for _, s := range states {
		st := s.Status()
		if st != "running" {
			st += " (sonde lab clean)"
		}
		t.row(s.ID, s.Profile, strconv.Itoa(s.PID), st, s.Started.Format(time.RFC3339), s.Client, s.Server)
	}
	return t.write(w)
}

// WriteLabNodes writes a lab's nodes: name, address and network namespace.
func WriteLabNodes(w io.Writer, nodes []lab.StateNode) error {
	t := table{indent: "  "}
	for _, n := range nodes {
		t.row(n.Name, n.Addr, "netns "+n.Namespace)
	}
	return t.write(w)
}
