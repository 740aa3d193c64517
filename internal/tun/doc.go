// Package tun creates Linux TUN devices (layer 3, IFF_TUN|IFF_NO_PI) and gives
// raw, non-blocking access to their file descriptor for the emulator's
// forwarding loop, which polls them itself rather than through the Go
// runtime's netpoller so that it controls its wake-up precision.
//
// Devices offer TCP segmentation and checksum offload to the kernel
// (IFF_VNET_HDR, TUNSETOFFLOAD): a sender hands the device one TCP packet
// of up to 64 KB where it would otherwise cut it into MSS-sized segments
// and checksum each, and one read returns it. The package cuts it here, in
// one pass that also checksums, so callers still see only the packets a
// wire would carry (a 32 MB transfer in this package's test: 532 reads for
// 23 182 segments). Writes go the other way: consecutive segments of one
// TCP flow that the receiver's GRO would merge are written as one offload
// frame, and the receiving stack handles them once.
//
// Linux only: on other systems the package is empty and the commands
// that need it say they are not supported there.
package tun
