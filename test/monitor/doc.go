// Package monitor holds the lab proof of `sonde monitor` (issue 13, "Proof,
// in the lab"): the built daemon probes a sonde server across the adsl lab
// (seed 001's line) while cross traffic and a scheduled outage run, and the
// stored probes are analysed and checked against the lab's configured
// ground truth (the profile's rates, delays and buffer limits), never
// against hard-coded figures. docs/monitor.md, "Proof in the lab", lists
// the checks and why each bound is what it is.
//
// The tests need root (namespaces, TUN devices) and iperf3, and skip
// otherwise. bench/monitor_lab.sh runs a longer version with the same
// binary and lab.
package monitor
