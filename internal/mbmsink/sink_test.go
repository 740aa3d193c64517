package mbmsink

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/ipv4"

	"github.com/sonde-project/sonde/internal/mbmwire"
	"github.com/sonde-project/sonde/internal/protocol"
	"github.com/sonde-project/sonde/internal/stamp"
)

// testHost admits every session and counts the slots held, as the
// server's admission would; its limits default to the server's.
type testHost struct {
	maxPPS, maxBps float64

	mu     sync.Mutex
	active int
}

func (h *testHost) Admit(*http.Request) (func(), error) {
	h.mu.Lock()
	h.active++
	h.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			h.mu.Lock()
			h.active--
			h.mu.Unlock()
		})
	}, nil
}

func (h *testHost) Refuse(w http.ResponseWriter, err error) {
	var rej *RejectError
	if errors.As(err, &rej) {
		protocol.WriteError(w, rej.Status, rej.Reason)
		return
	}
	protocol.WriteError(w, http.StatusInternalServerError, err.Error())
}

func (h *testHost) Limits() (float64, float64) {
	return cmp.Or(h.maxPPS, 20000), cmp.Or(h.maxBps, 200e6)
}

func (h *testHost) activeCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.active
}

// newTestSink makes a sink with opt (a testHost, loopback and the
// server's default duration where opt leaves them), mounted as the server
// mounts it.
func newTestSink(t testing.TB, opt Options) (*Sink, *testHost, http.Handler) {
	t.Helper()
	h, _ := opt.Host.(*testHost)
	if h == nil {
		h = &testHost{}
	}
	opt.Host = h
	opt.Addr = cmp.Or(opt.Addr, "127.0.0.1:0")
	opt.MaxTime = cmp.Or(opt.MaxTime, 120*time.Second)
	opt.Listen = func(addr string) (*stamp.Conn, error) { return stamp.Listen("udp", addr) }
	k, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+mbmwire.PathSessions, k.HandleOpen)
	mux.HandleFunc("POST "+mbmwire.PathSessions+"/{id}/end", k.HandleEnd)
	t.Cleanup(k.Close)
	return k, h, mux
}

// mbmServer serves newTestSink on loopback and returns it with its host
// and base URL.
func mbmServer(t *testing.T, opt Options) (*Sink, *testHost, string) {
	t.Helper()
	k, h, mux := newTestSink(t, opt)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return k, h, srv.URL
}

func postJSON(t *testing.T, url string, in, out any) int {
	t.Helper()
	b, _ := json.Marshal(in)
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil && resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatal(err)
		}
	}
	return resp.StatusCode
}

func mbmRequest(packets int64) mbmwire.SessionRequest {
	return mbmwire.SessionRequest{Client: "test", Test: "8.1.1", RateBps: 10e6, PacketBytes: 200, TargetRTTMs: 10, TargetMTU: 228,
		DurationS: 5, Packets: packets, ReorderPackets: 4, LossTimeoutMs: 50}
}

// TestMBMSink sends garbage, a flood on unknown tokens, out-of-range and
// duplicate packets and one gap through the sink; only the session's own
// packets count, the feedback reports the gap lost, the end report agrees.
func TestMBMSink(t *testing.T) {
	k, h, base := mbmServer(t, Options{})
	var rep mbmwire.SessionReply
	if code := postJSON(t, base+mbmwire.PathSessions, mbmRequest(100), &rep); code != http.StatusOK {
		t.Fatalf("open: %d", code)
	}
	if rep.Packets != 100 || rep.Token == 0 || rep.Port == 0 {
		t.Fatalf("grant: %+v", rep)
	}
	c, err := net.Dial("udp", fmt.Sprintf("127.0.0.1:%d", rep.Port))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pkt := make([]byte, 200)
	send := func(tok uint64, seq uint64) {
		mbmwire.PutData(pkt, mbmwire.Data{Token: tok, Seq: seq, SendNs: time.Now().UnixNano()})
		if _, err := c.Write(pkt); err != nil {
			t.Fatal(err)
		}
	}
	// Garbage and a flood from unknown tokens: dropped, counted apart.
	for i := range 2000 {
		switch i % 3 {
		case 0:
			c.Write([]byte("garbage"))
		case 1:
			c.Write(bytes.Repeat([]byte{0xff}, 300))
		default:
			send(rep.Token+1+uint64(i), uint64(i))
		}
	}
	// Packets 0-49 but 20, one duplicate, one beyond the grant.
	for i := uint64(0); i < 50; i++ {
		if i != 20 {
			send(rep.Token, i)
		}
		if i%10 == 0 {
			time.Sleep(time.Millisecond) // stay inside the socket buffer
		}
	}
	send(rep.Token, 7)
	send(rep.Token, 150)
	// Packet 50 with ECN CE (the DS field read with IP_RECVTOS).
	if err := ipv4.NewConn(c.(*net.UDPConn)).SetTOS(0x03); err != nil {
		t.Fatal(err)
	}
	send(rep.Token, 50)
	// The feedback: packets up to 50 final after the loss timeout, 50 with CE.
	_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
	buf := make([]byte, 2048)
	var fb mbmwire.Feedback
	for fb.First+uint64(fb.Count) < 51 {
		n, err := c.Read(buf)
		if err != nil {
			t.Fatalf("feedback: %v (last %+v)", err, fb)
		}
		if fb, err = mbmwire.ParseFeedback(buf[:n]); err != nil || fb.Token != rep.Token {
			t.Fatalf("feedback: %v, token %d", err, fb.Token)
		}
	}
	for i := uint32(0); i < fb.Count; i++ {
		arrived, ce := fb.Fate(i)
		if seq := fb.First + uint64(i); arrived != (seq != 20) || ce != (seq == 50) {
			t.Errorf("feedback: packet %d arrived %v CE %v", seq, arrived, ce)
		}
	}
	var final mbmwire.Report
	if code := postJSON(t, base+mbmwire.PathSessions+"/"+rep.ID+"/end", mbmwire.EndRequest{Sent: 60, From: 10, Verdict: "PASS"}, &final); code != http.StatusOK {
		t.Fatalf("end: %d", code)
	}
	if final.Received != 50 || final.CE != 1 || final.Duplicates != 1 || final.OutOfRange != 1 || final.Sent != 60 {
		t.Errorf("report: %+v", final)
	}
	for seq := int64(10); seq < 60; seq++ {
		arrived, _, ok := final.Fate(seq)
		if want := seq <= 50 && seq != 20; !ok || arrived != want {
			t.Errorf("report: packet %d arrived %v ok %v", seq, arrived, ok)
		}
	}
	k.mu.Lock()
	unknown, malformed, open := k.unknown, k.malformed, len(k.open)
	k.mu.Unlock()
	if unknown < 600 || malformed < 1300 || open != 0 {
		t.Errorf("unknown %d, malformed %d, open %d", unknown, malformed, open)
	}
	if a := h.activeCount(); a != 0 {
		t.Errorf("%d test slots still held", a)
	}
	// A repeated end returns the same counts; an unknown session is 404.
	var again mbmwire.Report
	if code := postJSON(t, base+mbmwire.PathSessions+"/"+rep.ID+"/end", mbmwire.EndRequest{}, &again); code != http.StatusOK || again.Received != 50 {
		t.Errorf("repeated end: %d %+v", code, again)
	}
	if code := postJSON(t, base+mbmwire.PathSessions+"/nope/end", mbmwire.EndRequest{}, nil); code != http.StatusNotFound {
		t.Errorf("unknown session: %d", code)
	}
}

// TestMBMLimits: the rate limit is named; per-client sessions are capped;
// a client that vanishes has its session expired and its slots freed.
func TestMBMLimits(t *testing.T) {
	k, h, base := mbmServer(t, Options{MaxTime: 2 * time.Second, Host: &testHost{maxBps: 5e6}})
	resp, _ := http.Post(base+mbmwire.PathSessions, "application/json", strings.NewReader(`{"test":"8.1.1","rate_bps":1e7,"packet_bytes":200,"duration_s":1,"packets":10,"reorder_packets":4,"loss_timeout_ms":50}`))
	var er struct{ Error string }
	json.NewDecoder(resp.Body).Decode(&er)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(er.Error, "limit of 5.0 Mbit/s") {
		t.Errorf("rate above the limit: %d %q", resp.StatusCode, er.Error)
	}
	req := mbmRequest(1e6)
	req.RateBps = 1e6
	var ids []string
	for range maxMBMSessionsPerIP {
		var rep mbmwire.SessionReply
		if code := postJSON(t, base+mbmwire.PathSessions, req, &rep); code != http.StatusOK {
			t.Fatalf("open: %d", code)
		}
		// Granted: the server's 2 s at 625 packets/s, not the 1e6 asked.
		if rep.Packets >= 1e6 || rep.DurationS != 2 {
			t.Errorf("grant %+v", rep)
		}
		ids = append(ids, rep.ID)
	}
	if code := postJSON(t, base+mbmwire.PathSessions, req, nil); code != http.StatusServiceUnavailable {
		t.Errorf("session beyond the per-client cap: %d", code)
	}
	// The clients vanish: expiry (the timer's work, called here rather
	// than waited for) frees every slot.
	for _, id := range ids {
		k.expire(id)
	}
	k.mu.Lock()
	open, perIP := len(k.open), len(k.perIP)
	k.mu.Unlock()
	if open != 0 || perIP != 0 || h.activeCount() != 0 {
		t.Errorf("after expiry: %d open, %d per-IP entries, %d slots", open, perIP, h.activeCount())
	}
	if code := postJSON(t, base+mbmwire.PathSessions, req, nil); code != http.StatusOK {
		t.Errorf("open after expiry: %d", code)
	}
}

// TestMBMByteLimit: the server's byte limit bounds the packets granted.
func TestMBMByteLimit(t *testing.T) {
	_, _, base := mbmServer(t, Options{MaxBytes: 100_000})
	var rep mbmwire.SessionReply
	if code := postJSON(t, base+mbmwire.PathSessions, mbmRequest(10_000), &rep); code != http.StatusOK {
		t.Fatalf("open: %d", code)
	}
	if rep.Packets != 500 { // 100,000 bytes of 200-byte datagrams
		t.Errorf("granted %d packets, want 500", rep.Packets)
	}
}
