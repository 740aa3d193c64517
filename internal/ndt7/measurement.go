package ndt7

import (
	"github.com/sonde-project/sonde/internal/model"
)

// Measurement is the JSON of an ndt7 textual message (spec "Measurement
// message", v0.9.0 and later). Field names are the spec's.
type Measurement struct {
	AppInfo        *AppInfo        `json:"AppInfo,omitempty"`
	ConnectionInfo *ConnectionInfo `json:"ConnectionInfo,omitempty"`
	// Origin is "server" or "client".
	Origin string `json:"Origin,omitempty"`
	// Test is "download" or "upload".
	Test    string   `json:"Test,omitempty"`
	TCPInfo *TCPInfo `json:"TCPInfo,omitempty"`
}

// AppInfo is the application-level progress of a test.
type AppInfo struct {
	// ElapsedTime is µs since the test began.
	ElapsedTime int64 `json:"ElapsedTime"`
	// NumBytes is the WebSocket payload sent (download) or received
	// (upload) so far, without WebSocket, TLS or TCP/IP overhead.
	NumBytes int64 `json:"NumBytes"`
}

// ConnectionInfo names the connection's endpoints as the server sees them.
// The server sends it once, in the first measurement.
type ConnectionInfo struct {
	Client string `json:"Client"`
	Server string `json:"Server"`
	UUID   string `json:"UUID,omitempty"`
}

// TCPInfo holds the TCP_INFO variables the spec names, from the server's
// socket. Times are µs; byte counts are at TCP level (headers of WebSocket
// and TLS included). The spec asks for exactly these fields.
type TCPInfo struct {
	BusyTime      int64 `json:"BusyTime"`
	BytesAcked    int64 `json:"BytesAcked"`
	BytesReceived int64 `json:"BytesReceived"`
	BytesSent     int64 `json:"BytesSent"`
	BytesRetrans  int64 `json:"BytesRetrans"`
	// ElapsedTime is µs since the test began, when TCP_INFO was read.
	ElapsedTime   int64 `json:"ElapsedTime"`
	MinRTT        int64 `json:"MinRTT"`
	RTT           int64 `json:"RTT"`
	RTTVar        int64 `json:"RTTVar"`
	RWndLimited   int64 `json:"RWndLimited"`
	SndBufLimited int64 `json:"SndBufLimited"`
}

func newTCPInfo(s model.TCPSample, elapsedUs int64) *TCPInfo {
	return &TCPInfo{
		BusyTime:      int64(s.BusyTimeUs),
		BytesAcked:    int64(s.BytesAcked),
		BytesReceived: int64(s.BytesReceived),
		BytesSent:     int64(s.BytesSent),
		BytesRetrans:  int64(s.BytesRetrans),
		ElapsedTime:   elapsedUs,
		MinRTT:        int64(s.MinRTTUs),
		RTT:           int64(s.RTTUs),
		RTTVar:        int64(s.RTTVarUs),
		RWndLimited:   int64(s.RwndLimitedUs),
		SndBufLimited: int64(s.SndbufLimitedUs),
	}
}
