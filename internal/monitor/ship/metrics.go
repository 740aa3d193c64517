package ship

import (
	"github.com/sonde-project/sonde/internal/metrictext"
)

// Collector exports the shipper's lag for the daemon's /metrics.
func (s *Shipper) Collector() metrictext.Collector { return collector{s} }

type collector struct{ s *Shipper }

func (c collector) Collect(w *metrictext.Writer) {
	st := c.s.Status()
	for _, f := range []struct {
		name, help, typ string
		v               func(TableStatus) float64
	}{
		{"sonde_monitor_ship_lag_seconds", "Age of the oldest local row the fleet store has not confirmed (0: none pending).", metrictext.Gauge, func(t TableStatus) float64 { return t.LagSeconds }},
		{"sonde_monitor_ship_pending_rows", "Local rows past the shipping watermark (counted up to 10M).", metrictext.Gauge, func(t TableStatus) float64 { return float64(t.PendingRows) }},
		{"sonde_monitor_ship_rows_total", "Rows the fleet store confirmed since the daemon started.", metrictext.Counter, func(t TableStatus) float64 { return float64(t.ShippedRows) }},
	} {
		if len(st.Tables) == 0 {
			break
		}
		w.Family(f.name, f.help, f.typ)
		for _, t := range st.Tables {
			w.Sample(f.name, f.v(t), "table", string(t.Table))
		}
	}
	up := 0.0
	if st.Healthy {
		up = 1
	}
	w.Family("sonde_monitor_ship_errors_total", "Failed shipping passes (store down, refused).", metrictext.Counter)
	w.Sample("sonde_monitor_ship_errors_total", float64(st.Errors))
	w.Family("sonde_monitor_ship_healthy", "1 when the last shipping pass worked.", metrictext.Gauge)
	w.Sample("sonde_monitor_ship_healthy", up)
	w.Family("sonde_monitor_ship_unshipped_deleted_rows_total", "Rows retention deleted before the fleet store confirmed them (past the hard cap).", metrictext.Counter)
	w.Sample("sonde_monitor_ship_unshipped_deleted_rows_total", float64(st.UnshippedDeleted))
}
