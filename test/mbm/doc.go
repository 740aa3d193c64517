// Package mbm holds the lab proofs of `sonde mbm` (issue 14, "Proof, in
// the lab"): seed 002's three experiments, rerun with the built binary
// (`sonde serve` and `sonde mbm` in the lab's namespaces, each at the
// ends of the path or subpath it measures) and every verdict checked
// against the emulator's configured path and its per-packet ground truth,
// never against hard-coded figures:
//
//   - interconnection (vantage-point independence): Basic Data Rate
//     (8.1.1) on a short link inside a long chain, with the link's own
//     and with the end-to-end target RTT, and on the end-to-end path;
//   - sustained bursts (8.5.1) against a 10-packet queue, by derate;
//   - composition of two lossy subpaths (`sonde mbm compose`) against the
//     end-to-end path's measured loss.
//
// The tests need root (namespaces, TUN devices) and skip otherwise.
// bench/mbm_lab.sh runs them with more runs per point and prints the
// tables beside the seed's figures; with SONDE_MBM_LAB_OUT set, every
// accepted result and composition is kept there for `sonde mbm summary`
// (the script's plots). docs/mbm.md ("Lab proofs") has the measured
// figures.
package mbm
