package ship

import (
	"github.com/prometheus/client_golang/prometheus"
)

var (
	descLag      = prometheus.NewDesc("sonde_monitor_ship_lag_seconds", "Age of the oldest local row the fleet store has not confirmed (0: none pending).", []string{"table"}, nil)
	descPending  = prometheus.NewDesc("sonde_monitor_ship_pending_rows", "Local rows past the shipping watermark (counted up to 10M).", []string{"table"}, nil)
	descShipped  = prometheus.NewDesc("sonde_monitor_ship_rows_total", "Rows the fleet store confirmed since the daemon started.", []string{"table"}, nil)
	descErrors   = prometheus.NewDesc("sonde_monitor_ship_errors_total", "Failed shipping passes (store down, refused).", nil, nil)
	descUp       = prometheus.NewDesc("sonde_monitor_ship_healthy", "1 when the last shipping pass worked.", nil, nil)
	descUnshipDl = prometheus.NewDesc("sonde_monitor_ship_unshipped_deleted_rows_total", "Rows retention deleted before the fleet store confirmed them (past the hard cap).", nil, nil)
)

// Collector exports the shipper's lag for the daemon's /metrics.
func (s *Shipper) Collector() prometheus.Collector { return collector{s} }

type collector struct{ s *Shipper }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descLag, descPending, descShipped, descErrors, descUp, descUnshipDl} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	st := c.s.Status()
	for _, t := range st.Tables {
		ch <- prometheus.MustNewConstMetric(descLag, prometheus.GaugeValue, t.LagSeconds, string(t.Table))
		ch <- prometheus.MustNewConstMetric(descPending, prometheus.GaugeValue, float64(t.PendingRows), string(t.Table))
		ch <- prometheus.MustNewConstMetric(descShipped, prometheus.CounterValue, float64(t.ShippedRows), string(t.Table))
	}
	up := 0.0
	if st.Healthy {
		up = 1
	}
	ch <- prometheus.MustNewConstMetric(descErrors, prometheus.CounterValue, float64(st.Errors))
	ch <- prometheus.MustNewConstMetric(descUp, prometheus.GaugeValue, up)
	ch <- prometheus.MustNewConstMetric(descUnshipDl, prometheus.CounterValue, float64(st.UnshippedDeleted))
}
