// Package integration runs the sonde binary end to end, as a user would: a
// server and a client as separate processes, on loopback or in network
// namespaces joined by a veth pair, with the JSON result, packet captures
// and the one-line error messages checked against what the path and the
// input actually were. TestMain builds the binary once; root-only tests
// skip with a reason when not root.
package integration
