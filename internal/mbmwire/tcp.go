package mbmwire

import (
	"fmt"
	"math"
)

// Transports of a session: "" or TransportUDP is the UDP sink (data and
// feedback datagrams); TransportTCP a TCP connection whose receive buffer
// the server bounds before the handshake, for 8.1.2 over TCP (the
// window is the receiver's: docs/mbm-protocol.md, "TCP sessions").
const (
	TransportUDP = "udp"
	TransportTCP = "tcp"
)

// Bounds of a TCP session's receive window and buffer. Below two
// segments TCP stalls on delayed ACKs; above a few MiB the window is no
// longer a test pattern but a bulk transfer (and SO_RCVBUF is capped by
// net.core.rmem_max unless forced).
const (
	MinReceiveWindowBytes = 2048
	MaxReceiveWindowBytes = 4 << 20
	MinReceiveBufferBytes = 2048
	MaxReceiveBufferBytes = 4 << 20
	// TCPTokenLen is the session token the client writes first on its
	// connection (big-endian), before any data.
	TCPTokenLen = 8
)

// The receive-buffer rule (ReceiveBufferFor). Linux doubles the SO_RCVBUF
// it is given and advertises at most tcp_win_from_space() of it: the
// doubled buffer × scaling_ratio (learned from the received skbs' payload
// over truesize), less what its queues hold, rounded down to a whole
// segment. Measured on Linux 6.18 through the lab's TUN links (MSS 1448;
// SO_RCVBUF 4096, 8192, 13000, 16384, 20000, 32768 → 2, 6, 10, 13, 16, 27
// segments advertised at most): advertised ≈ 1.262 × SO_RCVBUF − 2270
// bytes. The rule inverts that and aims half a segment above the window
// asked for, so that the kernel's rounding down lands on it.
const (
	rcvbufSlope  = 1.262
	rcvbufOffset = 2270 + 724
)

// ReceiveBufferFor is the SO_RCVBUF that makes a Linux receiver advertise
// about window bytes at most (the rule above), within the bounds. A
// receiver whose skbs have another truesize advertises a different
// window: the client reads the window back (tcpi_snd_wnd) and may ask
// again with an explicit ReceiveBufferBytes.
func ReceiveBufferFor(window int) int {
	b := int(math.Ceil(float64(window+rcvbufOffset) / rcvbufSlope))
	return max(MinReceiveBufferBytes, min(b, MaxReceiveBufferBytes))
}

// validateTCP checks the fields of a TCP session: the fields of the UDP
// sink (packet_bytes, packets, reorder_packets, loss_timeout_ms,
// feedback_packets) are not used and not checked.
func (q *SessionRequest) validateTCP() error {
	switch {
	case q.ReceiveWindowBytes < MinReceiveWindowBytes || q.ReceiveWindowBytes > MaxReceiveWindowBytes:
		return fmt.Errorf("receive_window_bytes %d: want %d to %d", q.ReceiveWindowBytes, MinReceiveWindowBytes, MaxReceiveWindowBytes)
	case q.ReceiveBufferBytes != 0 && (q.ReceiveBufferBytes < MinReceiveBufferBytes || q.ReceiveBufferBytes > MaxReceiveBufferBytes):
		return fmt.Errorf("receive_buffer_bytes %d: want 0 (the server's rule) or %d to %d", q.ReceiveBufferBytes, MinReceiveBufferBytes, MaxReceiveBufferBytes)
	}
	return nil
}

// TCPReport is the server's readback of a TCP session's connection: what
// bounded the window, and what arrived.
type TCPReport struct {
	// Connected says whether the client's connection arrived (with its
	// token, from its address) before the accept deadline.
	Connected bool `json:"connected"`
	// ReceiveWindowBytes is the window asked for; ReceiveBufferSetBytes
	// the SO_RCVBUF the server set on the listener before listen();
	// ReceiveBufferBytes SO_RCVBUF as the kernel holds it on the
	// connection (doubled).
	ReceiveWindowBytes    int `json:"receive_window_bytes"`
	ReceiveBufferSetBytes int `json:"receive_buffer_set_bytes"`
	ReceiveBufferBytes    int `json:"receive_buffer_bytes"`
	// MaxRcvWndBytes is the largest window the server advertised
	// (tcpi_rcv_wnd, sampled while it read; 0 on a kernel without it,
	// before 6.2); RcvSpaceBytes the receiver's tcpi_rcv_space at the
	// end; WindowClampBytes TCP_WINDOW_CLAMP read back on the connection.
	MaxRcvWndBytes   uint32 `json:"max_rcv_wnd_bytes"`
	RcvSpaceBytes    uint32 `json:"rcv_space_bytes"`
	WindowClampBytes int    `json:"window_clamp_bytes"`
	// Bytes received after the token (the Report's first_ns, last_ns
	// and rate_bps are of these reads).
	Bytes int64 `json:"bytes"`
	// Rejected counts connections closed for a wrong token or source
	// address while the server waited for the client's.
	Rejected int `json:"rejected,omitempty"`
}
