package httpload

// loadCongestion are the congestion controls a responsiveness test's load
// connections ask for, in order (LossBased). The draft measures under
// working conditions: the bottleneck saturated and its buffer full
// (draft-ietf-ippm-responsiveness-09 §4.1). A loss-based sender fills a
// drop-tail buffer whatever else runs; BBR fills it only by accident (its
// flows added one per interval start with the queue the earlier ones made
// as their min_rtt, so whether the queue fills depends on when flows join
// and when ProbeRTT drains it). On the lab's fiber path under the host's
// BBR, sonde rpm's download read 1977, 566 and 2390 RPM in three runs;
// docs/interop.md has the figures. Cubic is every common client OS's
// default; Reno is the kernel's always-allowed fallback.
var loadCongestion = [...]string{"cubic", "reno"}
