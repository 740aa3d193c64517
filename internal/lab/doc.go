// Package lab builds sonde's test topologies: a chain of network namespaces
// client — link — [router-1 — link]… — server, joined by emulated links
// (package emulator/forward over TUN devices), with addresses from
// 198.18.0.0/15 only and names unique per run. It records the lab in a
// state file under /run/sonde/lab so that other sonde processes can run
// commands in it (lab exec) or tear it down, and cleans what a crashed run
// left behind.
//
// Addressing: link i (1-based) uses 198.18.i.0/24; its client-side end is
// 198.18.i.1, its server-side end 198.18.i.2, and 198.18.i.254 is the
// source of the ICMP errors it sends. The client is 198.18.1.1, the server
// 198.18.N.2 for N links; routers forward between their two ends.
//
// Profiles (profile.go) are portable; building a lab is Linux only.
package lab
