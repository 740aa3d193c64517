package report

import (
	"io"
	"slices"
	"strings"

	"github.com/sonde-project/sonde/internal/store"
)

// WriteFleetMonitors writes `sonde store monitors`: a row per monitor of
// a fleet store, whether it is enrolled, holds a token or is revoked, the
// first 8 characters of the instance that ships as it, and its labels.
func WriteFleetMonitors(w io.Writer, ms []store.FleetMonitor) error {
	var t table
	t.row("NAME", "ENROLLED", "TOKEN", "REVOKED", "INSTANCE", "LABELS")
	yes := map[bool]string{true: "yes", false: "no"}
	for _, m := range ms {
		keys := make([]string, 0, len(m.Labels))
		for k := range m.Labels {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		ls := make([]string, len(keys))
		for i, k := range keys {
			ls[i] = k + "=" + m.Labels[k]
		}
		inst := "-"
		if m.Instance != "" {
			inst = m.Instance[:min(8, len(m.Instance))]
		}
		t.row(m.Name, yes[m.Enrolled], yes[m.Token], yes[m.Revoked], inst, strings.Join(ls, ","))
	}
	return t.write(w)
}
