package http1

import (
	"math"
	"strings"
	"testing"

	"github.com/sonde-project/sonde/internal/model"
)

const ms = int64(1e6)

// conv drives a Conn like a TCP connection: each side has its own
// sequence space; send cuts the bytes into segments of at most mss.
type conv struct {
	c   *Conn
	seq [2]uint32
	t   int64
	mss int
}

func newConv() *conv {
	v := &conv{c: NewConn(0), seq: [2]uint32{1000, 500000}, mss: 1460}
	v.c.Segment(Client, v.t, &Seg{Seq: v.seq[0], SYN: true})
	v.c.Segment(Server, v.t, &Seg{Seq: v.seq[1], SYN: true, ACK: true, Ack: v.seq[0] + 1})
	v.seq[0]++
	v.seq[1]++
	return v
}

// seg feeds a segment that acknowledges everything the other side sent.
func (v *conv) seg(dir int, t int64, seq uint32, fin bool, p []byte, n int) {
	v.c.Segment(dir, t, &Seg{Seq: seq, Ack: v.seq[dir^1], ACK: true, FIN: fin, Payload: p, Len: n})
}

// raw feeds a segment without ACK.
func raw(c *Conn, dir int, t int64, seq uint32, syn bool, p []byte, n int) {
	c.Segment(dir, t, &Seg{Seq: seq, SYN: syn, Payload: p, Len: n})
}

// send sends s from dir at time t (ms), in segments of v.mss bytes.
func (v *conv) send(dir int, tms int64, s string) {
	v.t = tms * ms
	for len(s) > 0 {
		n := min(len(s), v.mss)
		v.seg(dir, v.t, v.seq[dir], false, []byte(s[:n]), n)
		v.seq[dir] += uint32(n)
		s = s[n:]
	}
}

func (v *conv) fin(dir int, tms int64) {
	v.seg(dir, tms*ms, v.seq[dir], true, nil, 0)
	v.seq[dir]++
}

func resp(status int, headers, body string) string {
	return "HTTP/1.1 " + fmtInt(status) + " X\r\n" + headers + "\r\n" + body
}

func fmtInt(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

func TestPersistentHTTP11(t *testing.T) {
	v := newConv()
	v.mss = 7 // headers split across many segments
	body := strings.Repeat("x", 3000)
	for i := range 3 {
		base := int64(i) * 1000
		v.send(Client, base+10, "GET /o"+fmtInt(i)+" HTTP/1.1\r\nHost: example.test\r\n\r\n")
		v.mss = 1460
		v.send(Server, base+110, resp(200, "Content-Length: 3000\r\n", body[:1000]))
		v.send(Server, base+130, body[1000:])
	}
	v.fin(Client, 5000)
	v.fin(Server, 5001)
	r := v.c.Result()
	if r == nil || r.Requests != 3 || r.Responses != 3 || r.Pipelined != 0 || !r.KeepAlive || r.Incomplete != "" {
		t.Fatalf("got %+v", r)
	}
	if r.CloseBy != "client" || r.CloseHow != "fin" || !near(r.IdleBeforeCloseS, 5-2.13) {
		t.Errorf("close %q %q idle %v", r.CloseBy, r.CloseHow, r.IdleBeforeCloseS)
	}
	for i, x := range r.Exchanges {
		if x.Method != "GET" || x.Path != "/o"+fmtInt(i) || x.Host != "example.test" || x.Status != 200 ||
			x.RespBodyBytes != 3000 || !near(x.TTFBMs, 100) || !near(x.CompleteMs, 120) || !x.KeepAlive {
			t.Errorf("exchange %d: %+v", i, x)
		}
		if !near(x.RequestS, float64(i)+0.010) {
			t.Errorf("exchange %d starts at %v", i, x.RequestS)
		}
	}
}

func TestChunkedHeadNotModifiedContinue(t *testing.T) {
	v := newConv()
	v.send(Client, 0, "GET /c HTTP/1.1\r\nHost: h\r\n\r\n")
	v.send(Server, 50, "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n5;ext=1\r\nhello\r\n")
	v.send(Server, 60, "a\r\n0123456789\r\n0\r\nTrailer: x\r\n\r\n")
	v.send(Client, 100, "HEAD /h HTTP/1.1\r\n\r\n")
	v.send(Server, 150, resp(200, "Content-Length: 99999\r\n", "")) // HEAD: no body despite the length
	v.send(Client, 200, "GET /n HTTP/1.1\r\nIf-None-Match: x\r\n\r\n")
	v.send(Server, 250, resp(304, "Content-Length: 5\r\n", ""))
	v.send(Client, 300, "POST /p HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n")
	v.send(Server, 320, "HTTP/1.1 100 Continue\r\n\r\n")
	v.send(Client, 340, "data")
	v.send(Server, 400, resp(201, "Content-Length: 2\r\nConnection: close\r\n", "ok"))
	v.fin(Server, 401)
	r := v.c.Result()
	if r == nil || r.Requests != 4 || r.Responses != 4 || r.Incomplete != "" || r.KeepAlive || r.CloseBy != "server" {
		t.Fatalf("got %+v", r)
	}
	want := []struct {
		status   int
		body     uint64
		ttfb, cm float64
	}{{200, 15, 50, 60}, {200, 0, 50, 50}, {304, 0, 50, 50}, {201, 2, 20, 100}}
	for i, w := range want {
		x := r.Exchanges[i]
		if x.Status != w.status || x.RespBodyBytes != w.body || !near(x.TTFBMs, w.ttfb) || !near(x.CompleteMs, w.cm) {
			t.Errorf("exchange %d: %+v, want %+v", i, x, w)
		}
	}
	if x := r.Exchanges[3]; x.ReqBytes != uint64(len("POST /p HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n")+4) || x.KeepAlive {
		t.Errorf("POST: %+v", x)
	}
}

func TestHTTP10CloseDelimited(t *testing.T) {
	v := newConv()
	v.send(Client, 0, "GET / HTTP/1.0\r\n\r\n")
	v.send(Server, 100, "HTTP/1.0 200 OK\r\nContent-Type: text/html\r\n\r\n"+strings.Repeat("b", 5000))
	v.send(Server, 180, strings.Repeat("b", 100))
	v.fin(Server, 190)
	v.fin(Client, 200)
	r := v.c.Result()
	if r == nil || r.Version != "HTTP/1.0" || r.Requests != 1 || r.Responses != 1 || r.KeepAlive || r.CloseBy != "server" {
		t.Fatalf("got %+v", r)
	}
	if x := r.Exchanges[0]; x.RespBodyBytes != 5100 || !near(x.CompleteMs, 180) || x.KeepAlive {
		t.Errorf("exchange %+v", x)
	}
}

func TestHTTP10KeepAlive(t *testing.T) {
	v := newConv()
	for i := range 2 {
		b := int64(i) * 100
		v.send(Client, b, "GET /"+fmtInt(i)+" HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n")
		v.send(Server, b+50, "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 3\r\n\r\nabc")
	}
	r := v.c.Result()
	if r.Requests != 2 || r.Responses != 2 || !r.KeepAlive || !r.Exchanges[0].KeepAlive {
		t.Fatalf("got %+v", r)
	}
	// Without the keep-alive token an HTTP/1.0 exchange is not persistent.
	v = newConv()
	v.send(Client, 0, "GET / HTTP/1.0\r\n\r\n")
	v.send(Server, 50, "HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\nabc")
	if r := v.c.Result(); r.KeepAlive || r.Responses != 1 {
		t.Fatalf("got %+v", r)
	}
}

func TestPipelining(t *testing.T) {
	v := newConv()
	v.send(Client, 0, "GET /a HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\n\r\nGET /c HTTP/1.1\r\n\r\n")
	v.send(Server, 100, resp(200, "Content-Length: 1\r\n", "a")+resp(404, "Content-Length: 2\r\n", "bb"))
	v.send(Server, 150, resp(200, "Content-Length: 3\r\n", "ccc"))
	r := v.c.Result()
	if r.Requests != 3 || r.Responses != 3 || r.Pipelined != 2 {
		t.Fatalf("got %+v", r)
	}
	if r.Exchanges[1].Status != 404 || r.Exchanges[1].Path != "/b" || !near(r.Exchanges[2].TTFBMs, 150) || !near(r.Exchanges[2].CompleteMs, 150) {
		t.Errorf("exchanges %+v", r.Exchanges)
	}
}

// TestReorderAndRetransmission: server segments arrive out of order, one is
// retransmitted; the analysis reassembles them.
func TestReorderAndRetransmission(t *testing.T) {
	c := NewConn(0)
	raw(c, Client, 0, 99, true, nil, 0)
	raw(c, Server, 0, 999, true, nil, 0)
	req := "GET / HTTP/1.1\r\n\r\n"
	raw(c, Client, 1*ms, 100, false, []byte(req), len(req))
	raw(c, Client, 2*ms, 100, false, []byte(req), len(req)) // retransmission
	msg := resp(200, "Content-Length: 20\r\n", strings.Repeat("z", 20))
	a, b, d := msg[:10], msg[10:30], msg[30:]
	raw(c, Server, 10*ms, 1000, false, []byte(a), len(a))
	raw(c, Server, 11*ms, 1030, false, []byte(d), len(d)) // ahead of a hole
	raw(c, Server, 40*ms, 1010, false, []byte(b), len(b)) // fills it
	raw(c, Server, 41*ms, 1010, false, []byte(b), len(b)) // duplicate
	r := c.Result()
	if r.Requests != 1 || r.Responses != 1 || r.Incomplete != "" {
		t.Fatalf("got %+v", r)
	}
	if x := r.Exchanges[0]; !near(x.TTFBMs, 9) || !near(x.CompleteMs, 39) {
		t.Errorf("exchange %+v", x)
	}
}

func TestGapGivesUp(t *testing.T) {
	v := newConv()
	v.send(Client, 0, "GET / HTTP/1.1\r\n\r\n")
	v.send(Server, 10, resp(200, "Content-Length: 10\r\n", "01234"))
	v.seq[Server] += 100 // bytes the capture never saw
	v.send(Server, 20, "56789")
	r := v.c.Result()
	if r.Incomplete != "gap" || r.Responses != 0 || r.Requests != 1 || r.Exchanges[0].TTFBMs == 0 {
		t.Fatalf("got %+v", r)
	}
}

func TestSnapLength(t *testing.T) {
	// Body bytes cut by the snap length are skipped by their length.
	v := newConv()
	v.send(Client, 0, "GET / HTTP/1.1\r\n\r\n")
	h := resp(200, "Content-Length: 2000\r\n", "")
	v.seg(Server, 5*ms, v.seq[Server], false, []byte(h+"ab"), len(h)+1400)
	v.seg(Server, 6*ms, v.seq[Server]+uint32(len(h)+1400), false, []byte("cd"), 600)
	if r := v.c.Result(); r.Responses != 1 || r.Incomplete != "" || r.Exchanges[0].RespBodyBytes != 2000 {
		t.Fatalf("got %+v", r)
	}
	// Headers cut: the connection is given up.
	v = newConv()
	v.seg(Client, 0, v.seq[Client], false, []byte("GET / HT"), 40)
	if r := v.c.Result(); r != nil {
		t.Fatalf("got %+v", r)
	}
}

func TestNotHTTPAndMalformed(t *testing.T) {
	v := newConv()
	v.send(Server, 0, "220 smtp.example ESMTP\r\n")
	v.send(Client, 1, "EHLO x\r\n")
	if r := v.c.Result(); r != nil {
		t.Fatalf("SMTP taken as HTTP: %+v", r)
	}
	v = newConv()
	v.send(Client, 0, "GET / HTTP/1.1\r\n\r\n")
	v.send(Server, 1, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nx")
	if r := v.c.Result(); r == nil || r.Incomplete != "malformed" {
		t.Fatalf("conflicting lengths: %+v", r)
	}
	v = newConv()
	v.send(Client, 0, "GET /ws HTTP/1.1\r\nUpgrade: websocket\r\n\r\n")
	v.send(Server, 1, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n\x81\x05hello")
	if r := v.c.Result(); r == nil || r.Incomplete != "upgrade" || r.Exchanges[0].TTFBMs != 1 {
		t.Fatalf("upgrade: %+v", r)
	}
}

func TestPages(t *testing.T) {
	x := func(req, ttfb, complete float64) model.HTTPExchange {
		return model.HTTPExchange{Method: "GET", RequestS: req, TTFBMs: ttfb, CompleteMs: complete, Host: "h", RespBytes: 100}
	}
	conns := []model.TCPConn{
		// Page 1: a connection for the HTML, then two in parallel.
		{A: "198.18.0.1:4000", StartS: 0, SawSYN: true, HTTP: &model.HTTPConn{Exchanges: []model.HTTPExchange{x(0.1, 100, 300)}}},
		{A: "198.18.0.1:4001", StartS: 0.4, SawSYN: true, HTTP: &model.HTTPConn{Exchanges: []model.HTTPExchange{x(0.5, 100, 200), x(0.8, 100, 100)}}},
		{A: "198.18.0.1:4002", StartS: 0.45, SawSYN: true, HTTP: &model.HTTPConn{Exchanges: []model.HTTPExchange{x(0.55, 100, 1000)}}},
		// Another client at the same time: its own page.
		{A: "[2001:db8::1]:4000", StartS: 0.2, SawSYN: true, HTTP: &model.HTTPConn{Exchanges: []model.HTTPExchange{x(0.3, 10, 20)}}},
		// Page 2 of the first client: 5 s later, reusing connection 1.
		{A: "198.18.0.1:4003", StartS: 6, SawSYN: true, HTTP: &model.HTTPConn{Exchanges: []model.HTTPExchange{x(6.1, 50, 60)}}},
		{A: "198.18.0.1:5000", StartS: 0, HTTP: nil}, // not HTTP
	}
	ps := Pages(conns, DefaultPageGap)
	if len(ps) != 3 {
		t.Fatalf("%d pages: %+v", len(ps), ps)
	}
	p := ps[0]
	if p.Client != "198.18.0.1" || p.Connections != 3 || p.NewConns != 3 || p.Requests != 4 || p.MaxParallel != 2 ||
		!near(p.StartS, 0) || !near(p.CompletionS, 1.55) || p.RespBytes != 400 {
		t.Errorf("page 1: %+v", p)
	}
	if p := ps[1]; p.Client != "198.18.0.1" || p.Connections != 1 || !near(p.StartS, 6) || !near(p.CompletionS, 0.16) {
		t.Errorf("page 2: %+v", p)
	}
	if p := ps[2]; p.Client != "2001:db8::1" || p.Requests != 1 {
		t.Errorf("page 3: %+v", p)
	}
}

// TestCaptureOrder: a capture that writes a response before its request
// (two writer threads; the timestamps are right) is still followed.
func TestCaptureOrder(t *testing.T) {
	v := newConv()
	req := "GET / HTTP/1.1\r\n\r\n"
	r := resp(200, "Content-Length: 2\r\n", "ok")
	v.c.Segment(Server, 10*ms, &Seg{Seq: v.seq[Server], Ack: v.seq[Client] + uint32(len(req)), ACK: true, Payload: []byte(r), Len: len(r)})
	v.c.Segment(Client, 9*ms, &Seg{Seq: v.seq[Client], Ack: v.seq[Server], ACK: true, Payload: []byte(req), Len: len(req)})
	got := v.c.Result()
	if got == nil || got.Responses != 1 || !near(got.Exchanges[0].TTFBMs, 1) || got.Incomplete != "" {
		t.Fatalf("got %+v", got)
	}
}

func TestCloseOrder(t *testing.T) {
	// The server's FIN acknowledges the client's: the client closed, even
	// when the capture has the server's FIN first.
	v := newConv()
	v.send(Client, 0, "GET / HTTP/1.1\r\n\r\n")
	v.send(Server, 10, resp(200, "Content-Length: 2\r\n", "ok"))
	cfin := v.seq[Client]
	v.c.Segment(Server, 101*ms, &Seg{Seq: v.seq[Server], Ack: cfin + 1, ACK: true, FIN: true})
	v.c.Segment(Client, 100*ms, &Seg{Seq: cfin, Ack: v.seq[Server], ACK: true, FIN: true})
	if r := v.c.Result(); r.CloseBy != "client" || !near(r.IdleBeforeCloseS, 0.09) {
		t.Errorf("closed by %q after %v s, want client after 0.09", r.CloseBy, r.IdleBeforeCloseS)
	}
	// Independent FINs, observer next to the client (server 300 ms away):
	// the client's FIN is seen first, but the server's, seen 100 ms later,
	// left the server 50 ms before the client's.
	c := NewConn(0)
	c.Segment(Client, 0, &Seg{Seq: 0, SYN: true})
	c.Segment(Server, 300*ms, &Seg{Seq: 0, SYN: true, ACK: true, Ack: 1})
	c.Segment(Client, 300*ms+ms/10, &Seg{Seq: 1, Ack: 1, ACK: true})
	req := "GET / HTTP/1.0\r\n\r\n"
	c.Segment(Client, 301*ms, &Seg{Seq: 1, Ack: 1, ACK: true, Payload: []byte(req), Len: len(req)})
	r := resp(200, "Content-Length: 2\r\n", "ok")
	c.Segment(Server, 601*ms, &Seg{Seq: 1, Ack: 1 + uint32(len(req)), ACK: true, Payload: []byte(r), Len: len(r)})
	c.Segment(Client, 700*ms, &Seg{Seq: 1 + uint32(len(req)), Ack: 1 + uint32(len(r)), ACK: true, FIN: true})
	c.Segment(Server, 800*ms, &Seg{Seq: 1 + uint32(len(r)), Ack: 1 + uint32(len(req)), ACK: true, FIN: true})
	if got := c.Result(); got.CloseBy != "server" || got.CloseHow != "fin" {
		t.Errorf("independent FINs: closed by %q", got.CloseBy)
	}
}

func TestMayStartResponse(t *testing.T) {
	for _, tc := range []struct {
		b    string
		want bool
	}{
		{"HTTP/1.1 200 OK\r\n", true}, {"HTTP/1.0 404", true}, {"HTTP/1.", true},
		{"HTT", true}, {"", true}, // cut by the snap length: cannot tell
		{"HTTP/2.0 200", false}, {"220 smtp", false}, {"http/1.1 200", false}, {"\x16\x03\x01", false},
	} {
		if got := MayStartResponse([]byte(tc.b)); got != tc.want {
			t.Errorf("MayStartResponse(%q) = %v, want %v", tc.b, got, tc.want)
		}
	}
}
