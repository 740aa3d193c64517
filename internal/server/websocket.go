package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/gorilla/websocket"

	"github.com/sonde-project/sonde/internal/dscpmark"
	"github.com/sonde-project/sonde/internal/protocol"
	"github.com/sonde-project/sonde/internal/stream"
)

// WebSocketSubprotocol is the subprotocol a browser asks for to carry sonde
// streams over WebSocket (docs/browser.md): the same frames as a raw
// stream, inside binary messages.
const WebSocketSubprotocol = "sonde.v1"

// wsReadLimit bounds one incoming message: a client may pack several
// frames into one, but never more than a few maximal ones.
const wsReadLimit = 4 * (protocol.MaxPayload + protocol.HeaderLen)

// wsMaxFrame caps the data frames (one WebSocket message each) sent to a
// browser. Chromium copies every incoming message into a new ArrayBuffer;
// beyond PartitionAlloc's largest bucket (960 KiB) each is a fresh mmap,
// and perf showed the page's workers spending their time in page faults
// and zeroing. Smaller messages can reuse freed memory; on a loaded 2-core
// loopback the gain was within noise for download (docs/browser.md).
const wsMaxFrame = 256 << 10

// wsUpgrader accepts any origin: the session ID, not the page's origin, is
// the capability, exactly as for raw streams. Compression stays off so the
// random payload costs no CPU and the byte counts are wire bytes.
var wsUpgrader = websocket.Upgrader{
	ReadBufferSize:    64 << 10,
	WriteBufferSize:   64 << 10,
	Subprotocols:      []string{WebSocketSubprotocol},
	CheckOrigin:       func(*http.Request) bool { return true },
	EnableCompression: false,
}

// isWebSocket reports whether r asks for a WebSocket upgrade.
func isWebSocket(r *http.Request) bool { return websocket.IsWebSocketUpgrade(r) }

// upgradeWebSocket answers a WebSocket upgrade of a stream request and
// returns the connection as a byte stream of sonde frames, so runFlow
// measures it exactly like a raw stream (same sender, receiver, TCP_INFO).
func upgradeWebSocket(w http.ResponseWriter, r *http.Request, mark int) (*stream.BufferedConn, error) {
	if !headerHas(r.Header, "Sec-WebSocket-Protocol", WebSocketSubprotocol) {
		http.Error(w, `{"error":"WebSocket streams need the subprotocol `+WebSocketSubprotocol+`"}`, http.StatusBadRequest)
		return nil, errors.New("websocket: subprotocol " + WebSocketSubprotocol + " not offered")
	}
	ws, err := wsUpgrader.Upgrade(w, r, nil)
	if err != nil {
		return nil, fmt.Errorf("websocket upgrade: %w", err)
	}
	if mark >= 0 {
		if err := dscpmark.Conn(underlying(ws.NetConn()), mark); err != nil {
			ws.Close()
			return nil, err
		}
	}
	ws.SetReadLimit(wsReadLimit)
	return stream.NewBufferedConn(newWSConn(ws), nil, 0), nil
}

// underlying strips TLS from c, for socket options.
func underlying(c net.Conn) net.Conn {
	if tc, ok := c.(*tls.Conn); ok {
		return tc.NetConn()
	}
	return c
}

// wsConn presents a WebSocket as the byte stream of frames that
// stream.Sender and stream.Receiver expect. Reads concatenate the payloads
// of binary messages, so a frame may span messages or share one. Writes are
// frame-aware: each complete sonde frame goes out as exactly one binary
// message, however the sender splits its writes (header and payload come
// in separate calls), so a browser never has to reassemble a frame from
// two messages. One reader and one writer at a time, like a net.Conn used
// by a stream.
type wsConn struct {
	ws  *websocket.Conn
	raw net.Conn

	rd io.Reader // current incoming message

	w    io.WriteCloser // current outgoing message, nil between frames
	hdr  [protocol.HeaderLen]byte
	hdrN int // header bytes collected for the next frame
	left int // payload bytes still to write in the current frame
}

func newWSConn(ws *websocket.Conn) *wsConn {
	return &wsConn{ws: ws, raw: ws.NetConn()}
}

// Read returns payload bytes of the incoming binary messages. A close
// message from the client is the end of the stream (io.EOF), as a
// half-close is on a raw stream.
func (c *wsConn) Read(p []byte) (int, error) {
	for {
		if c.rd == nil {
			typ, r, err := c.ws.NextReader()
			if err != nil {
				if websocket.IsCloseError(err, websocket.CloseNormalClosure, websocket.CloseGoingAway, websocket.CloseNoStatusReceived) {
					return 0, io.EOF
				}
				return 0, err
			}
			if typ != websocket.BinaryMessage {
				return 0, fmt.Errorf("%w: text message on a sonde stream", protocol.ErrFrame)
			}
			c.rd = r
		}
		n, err := c.rd.Read(p)
		if errors.Is(err, io.EOF) {
			c.rd = nil
			if n > 0 {
				return n, nil
			}
			continue
		}
		return n, err
	}
}

// Write sends p, which continues the stream of frames written so far.
// After the client's close message (the end of its stream) a write fails
// with net.ErrClosed, which stream.PeerClosed treats as the normal end.
func (c *wsConn) Write(p []byte) (int, error) {
	n, err := c.write(p)
	if errors.Is(err, websocket.ErrCloseSent) {
		err = fmt.Errorf("websocket: %w", net.ErrClosed)
	}
	return n, err
}

func (c *wsConn) write(p []byte) (int, error) {
	total := 0
	for len(p) > 0 {
		if c.w == nil {
			k := copy(c.hdr[c.hdrN:], p)
			c.hdrN += k
			p = p[k:]
			total += k
			if c.hdrN < protocol.HeaderLen {
				return total, nil
			}
			_, n, err := protocol.ParseHeader(c.hdr[:])
			if err != nil {
				return total, fmt.Errorf("websocket: write: %w", err)
			}
			w, err := c.ws.NextWriter(websocket.BinaryMessage)
			if err != nil {
				return total, err
			}
			if _, err := w.Write(c.hdr[:]); err != nil {
				return total, err
			}
			c.w, c.hdrN, c.left = w, 0, n
		}
		if k := min(len(p), c.left); k > 0 {
			n, err := c.w.Write(p[:k])
			total += n
			c.left -= n
			p = p[n:]
			if err != nil {
				return total, err
			}
		}
		if c.left == 0 {
			err := c.w.Close()
			c.w = nil
			if err != nil {
				return total, err
			}
		}
	}
	return total, nil
}

// Close says goodbye with a close message when the connection still allows
// it, then closes the socket.
func (c *wsConn) Close() error {
	_ = c.ws.WriteControl(websocket.CloseMessage,
		websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(100*time.Millisecond))
	return c.ws.Close()
}

func (c *wsConn) LocalAddr() net.Addr  { return c.raw.LocalAddr() }
func (c *wsConn) RemoteAddr() net.Addr { return c.raw.RemoteAddr() }

func (c *wsConn) SetDeadline(t time.Time) error {
	return errors.Join(c.SetReadDeadline(t), c.SetWriteDeadline(t))
}

func (c *wsConn) SetReadDeadline(t time.Time) error { return c.ws.SetReadDeadline(t) }

// SetWriteDeadline bounds later writes (gorilla applies its deadline per
// write) and, on the socket itself, a write already blocked.
func (c *wsConn) SetWriteDeadline(t time.Time) error {
	_ = c.ws.SetWriteDeadline(t)
	return c.raw.SetWriteDeadline(t)
}

// SyscallConn exposes the TCP socket, so TCP_INFO sampling, buffer sizes
// and TCP_NOTSENT_LOWAT work on WebSocket streams as on raw ones.
func (c *wsConn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := underlying(c.raw).(syscall.Conn)
	if !ok {
		return nil, errors.New("websocket: not a socket")
	}
	return sc.SyscallConn()
}
