// Package reliability is the analysis of `sonde monitor` (docs/monitor.md):
// over a time range of probe samples or of their per-minute rollups it
// computes the delay summary, R(L) (metrics.md §6) over the range, over
// sliding windows and per load state with confidence bounds, requirement
// profile verdicts, and the events a person wants listed: outages, baseline
// steps and loaded episodes (added delay, bufferbloat grade, inferred
// buffer, queue class).
//
// It is pure: no I/O, no sockets, no clock reads. Samples arrive in send
// order per stream and are analysed in one streaming pass whose memory is
// bounded by the range's minutes, not its probes, so 30 days at 10 probes/s
// report in seconds; a report over years reads rollups (Roller builds them
// from raw samples).
package reliability
