// Package tcprun runs RFC 8337 §8's TCP tests (metrics.md §7, docs/mbm.md)
// over a stock Linux kernel: the client is the sender, over an upload
// stream of `sonde serve` (the server only sinks the bytes; 8.1.2 over
// a TCP MBM session, docs/mbm-protocol.md), and every figure comes from
// the sender's own TCP_INFO (and 8.1.2's window from the receiver's too).
//
//   - 8.1.1 paced full data rate: SO_MAX_PACING_RATE at the target rate;
//   - 8.1.2 full data windowed rate: unpaced, over a TCP MBM session of
//     the server whose receive buffer, set before the handshake, bounds
//     the window to W packets; the window read back from both ends and
//     a per-RTT delivery check (window.go, pure);
//   - 8.4 sender rate bursts: unpaced writes of a TSO segment's worth,
//     spaced for the target's mean rate;
//   - 8.5.1 sustained full-rate bursts: unpaced writes of W·derate
//     packets every RTT·derate.
//
// Each test has a growth period (the flow reaches its pattern; losses of
// slow start are not counted) and a test period in which the delivered
// segments and the marks (retransmissions − DSACK duplicates, + CE) feed
// internal/mbm's SPRT in TCP_INFO samples taken every ≤ 10 ms. The
// accounting of those samples is pure (account.go) and tested with
// synthetic samples; the socket options are Linux only.
package tcprun
