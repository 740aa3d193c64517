// Package forward runs the emulator's link model in real time between two
// packet devices (TUN devices in practice): for each direction one OS
// thread reads packets from the ingress device, stamps them with the
// monotonic clock, feeds them to an emulator.Link, and writes each packet
// to the egress device when the model says it is due. It writes the
// ground truth and, optionally, pcapng captures.
//
// Timing: deadlines are absolute model times; the thread sleeps in ppoll
// (high-resolution timer, timer slack set to 1 ns) until Spin before the
// deadline, then polls the ingress device without sleeping until the
// deadline, as long as busy-polling stays within SpinShare of its time
// (beyond, it coalesces: see SpinShare). The Go runtime's timers are not
// used: they round sleeps to about a millisecond.
//
// Linux only: on other systems the package is empty and the commands
// that need it say they are not supported there.
package forward
