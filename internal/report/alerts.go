package report

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sonde-project/sonde/internal/alert"
)

// WriteAlertsReplay writes what `sonde monitor alerts replay` found: the
// range and rules, each firing and resolution in time order (the alert's
// log line), and the alerts still firing at the end.
func WriteAlertsReplay(w io.Writer, res *alert.ReplayResult) error {
	ew := &errWriter{w: w}
	rules := make([]string, len(res.Rules))
	for i, r := range res.Rules {
		rules[i] = r.Name
	}
	fmt.Fprintf(ew, "monitor %s, %s to %s: %d probes, rules %s\n", res.Monitor,
		time.Unix(0, res.FromNs).UTC().Format(time.RFC3339), time.Unix(0, res.ToNs).UTC().Format(time.RFC3339), res.Probes, strings.Join(rules, ", "))
	fired := 0
	for _, a := range res.Changes {
		if a.Status == alert.StatusFiring {
			fired++
		}
		fmt.Fprintln(ew, alert.Format(a))
	}
	fmt.Fprintf(ew, "%d firings", fired)
	if res.Truncated {
		fmt.Fprint(ew, " (list truncated at 100000 changes)")
	}
	fmt.Fprintf(ew, "; still firing at the end: %d\n", len(res.Firing))
	for _, a := range res.Firing {
		fmt.Fprintln(ew, "  "+alert.Format(a))
	}
	return ew.err
}
