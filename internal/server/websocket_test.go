package server

import (
	"encoding/binary"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/sonde-project/sonde/internal/protocol"
)

func dialWS(t *testing.T, addr, id, kind, tag string, subprotocols []string) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	d := websocket.Dialer{Subprotocols: subprotocols, HandshakeTimeout: 5 * time.Second}
	return d.Dial("ws://"+addr+protocol.PathSessions+"/"+id+"/"+kind+"?tag="+tag, nil)
}

func fetchReport(t *testing.T, addr, id string) protocol.Report {
	t.Helper()
	resp, err := http.Get("http://" + addr + protocol.PathSessions + "/" + id + "/report?wait=all")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rep protocol.Report
	if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

// A WebSocket download carries one sonde frame per message, answers a
// probe between data frames, and is measured like a raw stream (TCP_INFO
// series, byte count).
func TestWebSocketDownload(t *testing.T) {
	_, addr := start(t, Config{PerIPPerMinute: -1})
	_, ses := createSession(t, addr, nil)
	ws, _, err := dialWS(t, addr, ses.ID, protocol.KindDownload, "d0", []string{WebSocketSubprotocol})
	if err != nil {
		t.Fatal(err)
	}
	if ws.Subprotocol() != WebSocketSubprotocol {
		t.Fatalf("subprotocol %q", ws.Subprotocol())
	}
	probe := protocol.AppendProbe(nil, protocol.Probe{Seq: 7, SentNs: 42})
	if err := ws.WriteMessage(websocket.BinaryMessage, probe); err != nil {
		t.Fatal(err)
	}
	var payload int64
	gotReply := false
	deadline := time.Now().Add(3 * time.Second)
	for msgs := 0; (msgs < 20 || !gotReply) && time.Now().Before(deadline); msgs++ {
		_ = ws.SetReadDeadline(deadline)
		typ, m, err := ws.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		if typ != websocket.BinaryMessage || len(m) < protocol.HeaderLen {
			t.Fatalf("message type %d, %d bytes", typ, len(m))
		}
		ft, n, err := protocol.ParseHeader(m)
		if err != nil {
			t.Fatal(err)
		}
		if n != len(m)-protocol.HeaderLen {
			t.Fatalf("message of %d bytes holds a frame of %d payload bytes: frames must not span messages", len(m), n)
		}
		switch ft {
		case protocol.FrameData:
			payload += int64(n)
		case protocol.FrameProbeReply:
			r := protocol.DecodeProbeReply(m[protocol.HeaderLen:])
			if r.Seq != 7 || r.SentNs != 42 || r.SendNs < r.RecvNs {
				t.Fatalf("probe reply %+v", r)
			}
			gotReply = true
		}
	}
	if !gotReply {
		t.Fatal("no probe reply on the loaded WebSocket")
	}
	_ = ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	ws.Close()
	rep := fetchReport(t, addr, ses.ID)
	if len(rep.Flows) != 1 {
		t.Fatalf("%d flows", len(rep.Flows))
	}
	f := rep.Flows[0]
	if f.Error != "" || f.Tag != "d0" || f.Bytes < payload || len(f.TCPInfo) == 0 || f.SndBufBytes == 0 {
		t.Fatalf("flow report: error %q tag %q bytes %d (client saw %d) tcpinfo %d sndbuf %d",
			f.Error, f.Tag, f.Bytes, payload, len(f.TCPInfo), f.SndBufBytes)
	}
}

// A WebSocket upload may pack several frames into a message and split a
// frame across messages; the server counts every payload byte and answers
// probes at once.
func TestWebSocketUpload(t *testing.T) {
	_, addr := start(t, Config{PerIPPerMinute: -1})
	_, ses := createSession(t, addr, nil)
	ws, _, err := dialWS(t, addr, ses.ID, protocol.KindUpload, "u0", []string{WebSocketSubprotocol})
	if err != nil {
		t.Fatal(err)
	}
	frame := func(n int) []byte {
		b := make([]byte, protocol.HeaderLen+n)
		protocol.PutHeader(b, protocol.FrameData, n)
		return b
	}
	var sent int64
	// Two frames in one message, then one frame split over two messages
	// with a probe in the second.
	msg := append(frame(1000), frame(3000)...)
	sent += 4000
	big := frame(70000)
	sent += 70000
	if err := ws.WriteMessage(websocket.BinaryMessage, msg); err != nil {
		t.Fatal(err)
	}
	if err := ws.WriteMessage(websocket.BinaryMessage, big[:30000]); err != nil {
		t.Fatal(err)
	}
	tail := append(big[30000:], protocol.AppendProbe(nil, protocol.Probe{Seq: 1, SentNs: 5})...)
	if err := ws.WriteMessage(websocket.BinaryMessage, tail); err != nil {
		t.Fatal(err)
	}
	_ = ws.SetReadDeadline(time.Now().Add(3 * time.Second))
	_, m, err := ws.ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != protocol.HeaderLen+protocol.ProbeReplyLen || m[0] != protocol.FrameProbeReply ||
		binary.BigEndian.Uint64(m[protocol.HeaderLen:]) != 1 {
		t.Fatalf("probe reply: % x", m)
	}
	_ = ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	ws.Close()
	rep := fetchReport(t, addr, ses.ID)
	f := rep.Flows[0]
	if f.Error != "" || f.Bytes != sent || len(f.Counts) < 2 || f.Counts[len(f.Counts)-1].Bytes != sent {
		t.Fatalf("flow report: error %q bytes %d want %d, counts %v", f.Error, f.Bytes, sent, f.Counts)
	}
}

// A WebSocket request without the sonde subprotocol is refused; a garbage
// frame ends the stream with the error recorded.
func TestWebSocketBadInput(t *testing.T) {
	_, addr := start(t, Config{PerIPPerMinute: -1})
	_, ses := createSession(t, addr, nil)
	_, resp, err := dialWS(t, addr, ses.ID, protocol.KindProbe, "p", nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("no subprotocol: err %v resp %v", err, resp)
	}
	ws, _, err := dialWS(t, addr, ses.ID, protocol.KindProbe, "p", []string{WebSocketSubprotocol})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if err := ws.WriteMessage(websocket.BinaryMessage, []byte{9, 0, 0, 0, 0, 0, 0, 0}); err != nil {
		t.Fatal(err)
	}
	rep := fetchReport(t, addr, ses.ID)
	var found bool
	for _, f := range rep.Flows {
		if f.Tag == "p" && f.Error != "" {
			found = true
		}
	}
	if !found {
		t.Fatalf("malformed frame not recorded: %+v", rep.Flows)
	}
}
