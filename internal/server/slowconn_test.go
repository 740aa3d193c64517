package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/sonde-project/sonde/internal/protocol"
)

// dialFrom connects to addr from the loopback address src (127.0.0.0/8 is
// all local on Linux), so one test can be several client IPs.
func dialFrom(t *testing.T, src, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// clientFrom is an HTTP client whose connections come from src.
func clientFrom(src string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
}

func healthz(c *http.Client, addr string) error {
	resp, err := c.Get("http://" + addr + "/healthz")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/healthz: %s", resp.Status)
	}
	return nil
}

// waitConns waits (bounded) until the server holds want connections from
// ip, and fails the test if it does not.
func waitConns(t *testing.T, s *Server, ip string, want int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		n, _ := s.conns.counts(ip)
		if n == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("server holds %d connections from %s, want %d", n, ip, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSlowClientsAreCut holds 200 slow-body POSTs, 200 idle keep-alive
// connections and 200 half-sent next requests against a server with 1 s
// timeouts: /healthz must answer meanwhile, and the server must close every
// one of them within a few seconds.
func TestSlowClientsAreCut(t *testing.T) {
	// Not parallel: it counts the process's descriptors.
	const n = 200
	const timeout = time.Second
	s, addr := start(t, Config{
		PerIPPerMinute: -1, HeaderTimeout: timeout, BodyTimeout: timeout, IdleTimeout: timeout,
		MaxConnsPerIP: 4 * n, MaxConns: 4 * n,
	})
	fd0 := openFDs(t)

	type held struct {
		kind   string
		c      net.Conn
		opened time.Time
	}
	var conns []held
	defer func() {
		for _, h := range conns {
			h.c.Close()
		}
	}()
	// keepAlive answers one full request, leaving the connection between
	// requests, as a browser leaves it.
	keepAlive := func(c net.Conn) {
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("first request: %v", err)
		}
		// The body is small and fully buffered with the headers.
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		_ = c.SetReadDeadline(time.Time{})
	}
	for i := 0; i < n; i++ {
		c := dialFrom(t, "127.0.0.1", addr)
		// Promises 1000 bytes, sends 1; more trickle in below.
		fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{", protocol.PathSessions)
		conns = append(conns, held{"slow body", c, time.Now()})

		c = dialFrom(t, "127.0.0.1", addr)
		keepAlive(c)
		conns = append(conns, held{"idle keep-alive", c, time.Now()})

		c = dialFrom(t, "127.0.0.1", addr)
		keepAlive(c)
		// Fewer than 4 bytes wait under the idle timeout, more under the
		// header timeout: both halves are covered.
		if i%2 == 0 {
			_, _ = io.WriteString(c, "GE")
		} else {
			_, _ = io.WriteString(c, "GET /healthz HTTP/1.1\r\nHo")
		}
		conns = append(conns, held{"half-sent request", c, time.Now()})
	}
	heldIP, heldAll := s.conns.counts("127.0.0.1")
	fdHeld := openFDs(t)

	// The server still answers a fresh client while they are open.
	if err := healthz(clientFrom("127.0.0.2"), addr); err != nil {
		t.Fatalf("while %d slow connections are open: %v", len(conns), err)
	}

	// The slow bodies trickle a byte every 200 ms: a deadline, not a gap
	// between reads, must end them.
	stop := make(chan struct{})
	var trickle sync.WaitGroup
	trickle.Add(1)
	go func() {
		defer trickle.Done()
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for k := 0; k < 50; k++ { // ≤ 10 s
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			for _, h := range conns {
				if h.kind == "slow body" {
					_ = h.c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
					_, _ = h.c.Write([]byte(" "))
				}
			}
		}
	}()

	// Each connection must reach EOF (or a reset) from the server's side
	// well before the client's own 10 s deadline.
	const bound = 10 * time.Second
	lived := make([]time.Duration, len(conns))
	errs := make([]error, len(conns))
	var wg sync.WaitGroup
	for i, h := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = h.c.SetReadDeadline(h.opened.Add(bound))
			_, err := io.Copy(io.Discard, h.c)
			lived[i] = time.Since(h.opened)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				errs[i] = fmt.Errorf("%s connection still open after %v", h.kind, bound)
			}
		}()
	}
	wg.Wait()
	close(stop)
	trickle.Wait()
	longest := map[string]time.Duration{}
	for i, h := range conns {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		longest[h.kind] = max(longest[h.kind], lived[i])
	}
	for _, h := range conns {
		h.c.Close()
	}
	// The server's side is gone too: nothing counted, descriptors back.
	waitConns(t, s, "127.0.0.1", 0)
	deadline := time.Now().Add(5 * time.Second)
	fdAfter := openFDs(t)
	for fdAfter > fd0+2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		fdAfter = openFDs(t)
	}
	t.Logf("held %d connections (server counted %d from the IP, %d in all); longest lives: %v; fds %d before, %d while held, %d after",
		len(conns), heldIP, heldAll, longest, fd0, fdHeld, fdAfter)
	if fdAfter > fd0+2 {
		t.Fatalf("fds: %d before, %d after", fd0, fdAfter)
	}
}

// TestConnCaps checks the per-IP and global connection caps: a connection
// over a cap gets a 503 and is closed, other IPs are served, and a freed slot is
// usable again.
func TestConnCaps(t *testing.T) {
	t.Run("per-ip", func(t *testing.T) {
		s, addr := start(t, Config{PerIPPerMinute: -1, MaxConnsPerIP: 5, MaxConns: 100})
		var idle []net.Conn
		defer func() {
			for _, c := range idle {
				c.Close()
			}
		}()
		for i := 0; i < 5; i++ {
			idle = append(idle, dialFrom(t, "127.0.0.1", addr))
		}
		waitConns(t, s, "127.0.0.1", 5)
		over := dialFrom(t, "127.0.0.1", addr)
		defer over.Close()
		fmt.Fprintf(over, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
		_ = over.SetReadDeadline(time.Now().Add(5 * time.Second))
		// The answer is a 503 that says why, then the close.
		got, err := io.ReadAll(over)
		if errors.Is(err, os.ErrDeadlineExceeded) || !strings.HasPrefix(string(got), "HTTP/1.1 503 ") || !strings.Contains(string(got), "too many connections") {
			t.Fatalf("connection over the per-IP cap: read %q, %v; want a 503 naming the cap, then the close", got, err)
		}
		if err := healthz(clientFrom("127.0.0.2"), addr); err != nil {
			t.Fatalf("another IP: %v", err)
		}
		idle[0].Close()
		waitConns(t, s, "127.0.0.1", 4)
		if err := healthz(clientFrom("127.0.0.1"), addr); err != nil {
			t.Fatalf("after a slot was freed: %v", err)
		}
	})
	t.Run("global", func(t *testing.T) {
		s, addr := start(t, Config{PerIPPerMinute: -1, MaxConnsPerIP: 100, MaxConns: 3})
		for i := 0; i < 3; i++ {
			c := dialFrom(t, "127.0.0.1", addr)
			defer c.Close()
		}
		waitConns(t, s, "127.0.0.1", 3)
		if err := healthz(clientFrom("127.0.0.2"), addr); err == nil {
			t.Fatal("a connection over the global cap was served")
		}
	})
	t.Run("streams not counted", func(t *testing.T) {
		// Upgraded streams leave the count: a test with more streams
		// than the per-IP cap runs.
		s, addr := start(t, Config{PerIPPerMinute: -1, MaxConnsPerIP: 2})
		_, ses := createSession(t, addr, nil)
		http.DefaultClient.CloseIdleConnections()
		for i := 0; i < 4; i++ {
			c, _ := upgrade(t, addr, ses.ID, protocol.KindProbe)
			defer c.Close()
		}
		waitConns(t, s, "127.0.0.1", 0)
	})
}

// TestTokenFailuresLimited: wrong tokens get 401 up to the burst, then 429
// with Retry-After for every attempt from that IP, the right token
// included; other IPs are unaffected; after the wait the right token works.
func TestTokenFailuresLimited(t *testing.T) {
	const burst = 10
	_, addr := start(t, Config{Token: "s3cret", PerIPPerMinute: -1, TokenFailRate: 1, TokenFailBurst: burst})
	try := func(src, token string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+protocol.PathSessions, strings.NewReader(`{"client":"test"}`))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := clientFrom(src).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, resp.Header.Get("Retry-After")
	}
	for i := 0; i < burst; i++ {
		if st, _ := try("127.0.0.1", "guess"+strconv.Itoa(i)); st != http.StatusUnauthorized {
			t.Fatalf("wrong token %d: %d, want 401", i, st)
		}
	}
	st, ra := try("127.0.0.1", "guess")
	if st != http.StatusTooManyRequests {
		t.Fatalf("wrong token after the burst: %d, want 429", st)
	}
	wait, err := strconv.Atoi(ra)
	if err != nil || wait < 1 || wait > 2 {
		t.Fatalf("Retry-After %q, want 1–2 s", ra)
	}
	if st, _ := try("127.0.0.1", "s3cret"); st != http.StatusTooManyRequests {
		t.Fatalf("right token while limited: %d, want 429 (no oracle for guesses)", st)
	}
	if st, _ := try("127.0.0.2", "guess"); st != http.StatusUnauthorized {
		t.Fatalf("wrong token from another IP: %d, want 401", st)
	}
	if err := healthz(clientFrom("127.0.0.1"), addr); err != nil {
		t.Fatalf("/healthz from the limited IP: %v", err)
	}
	time.Sleep(time.Duration(wait) * time.Second)
	if st, _ := try("127.0.0.1", "s3cret"); st != http.StatusOK {
		t.Fatalf("right token after Retry-After: %d, want 200", st)
	}
}

// TestIPBucketsBounded: the per-IP table never grows past its cap, IPs
// beyond it share the overflow bucket, and refilled buckets are dropped.
func TestIPBucketsBounded(t *testing.T) {
	tb := newIPBuckets(1, 3, 100)
	now := time.Unix(1000, 0)
	for i := 0; i < 1000; i++ {
		tb.take(fmt.Sprintf("10.0.%d.%d", i/256, i%256), now)
	}
	if len(tb.m) != 100 {
		t.Fatalf("%d entries, want the cap of 100", len(tb.m))
	}
	// 900 IPs shared the overflow bucket of 3: it is empty.
	if w := tb.wait("192.0.2.1", now); w <= 0 {
		t.Fatalf("an unknown IP with a full table waits %v, want the overflow bucket's wait", w)
	}
	// After the buckets refill (3 s at 1/s), the next purge empties the
	// table and new IPs get their own bucket.
	now = now.Add(4 * time.Second)
	if !tb.take("192.0.2.1", now) || len(tb.m) != 1 {
		t.Fatalf("after refill: %d entries, want 1", len(tb.m))
	}
}

// FuzzIPBuckets drives a small table with arbitrary operations and checks
// its invariants: bounded size, tokens within [0, burst], wait agreeing
// with take, and no IP getting more than twice (burst + refill) — the
// factor two being an IP that used the overflow bucket before getting
// its own.
func FuzzIPBuckets(f *testing.F) {
	f.Add([]byte{0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1})
	f.Add([]byte{1, 10, 1, 2, 200, 0, 3, 0, 1, 200, 255, 1})
	f.Add(make([]byte, 300))
	f.Fuzz(func(t *testing.T, ops []byte) {
		const rate, burst = 2.0, 4.0
		tb := newIPBuckets(rate, burst, 8)
		start := time.Unix(0, 0)
		now := start
		got := map[string]int{}
		for i := 0; i+2 < len(ops) && i < 3000; i += 3 {
			ip := "198.18.0." + strconv.Itoa(int(ops[i]%32))
			now = now.Add(time.Duration(ops[i+1]) * 10 * time.Millisecond)
			w := tb.wait(ip, now)
			if w < 0 {
				t.Fatalf("negative wait %v", w)
			}
			if ops[i+2]%2 == 1 {
				ok := tb.take(ip, now)
				if ok != (w == 0) {
					t.Fatalf("wait %v but take %v", w, ok)
				}
				if ok {
					got[ip]++
				}
			}
			if len(tb.m) > tb.max {
				t.Fatalf("%d entries over the cap %d", len(tb.m), tb.max)
			}
			for _, b := range append([]*bucket{&tb.overflow}, mapValues(tb.m)...) {
				if b.tokens < 0 || b.tokens > burst {
					t.Fatalf("bucket holds %v tokens", b.tokens)
				}
			}
			if limit := 2 * (burst + rate*now.Sub(start).Seconds()); float64(got[ip]) > limit+1e-9 {
				t.Fatalf("%s took %d tokens in %v (limit %v)", ip, got[ip], now.Sub(start), limit)
			}
		}
	})
}

func mapValues(m map[string]*bucket) []*bucket {
	var v []*bucket
	for _, b := range m {
		v = append(v, b)
	}
	return v
}

// TestStreamsOutliveTimeouts runs a raw download, upload and probe stream
// and a WebSocket download for longer than every connection timeout (the
// write timeout at its 5 s minimum, the others 1 s), slowly so the test
// costs little CPU: none of them may be cut.
func TestStreamsOutliveTimeouts(t *testing.T) {
	t.Parallel()
	_, addr := start(t, Config{
		PerIPPerMinute: -1, MaxDuration: 30 * time.Second,
		HeaderTimeout: time.Second, BodyTimeout: time.Second, IdleTimeout: time.Second, WriteTimeout: minWriteTimeout,
	})
	_, ses := createSession(t, addr, nil)
	run := minWriteTimeout + 1500*time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), run)
	defer cancel()

	var wg sync.WaitGroup
	errc := make(chan error, 4)
	// Each stream must still move data in its last second.
	lastSecond := func(what string, last time.Time) {
		if time.Since(last) > time.Second {
			errc <- fmt.Errorf("%s: no data since %v", what, last.Format(time.StampMilli))
		}
	}

	dl, dlr := upgrade(t, addr, ses.ID, protocol.KindDownload)
	defer dl.Close()
	wg.Add(1)
	go func() { // a slow reader: 64 KiB every 100 ms
		defer wg.Done()
		buf := make([]byte, 64<<10)
		var last time.Time
		for ctx.Err() == nil {
			_ = dl.SetReadDeadline(time.Now().Add(2 * time.Second))
			if _, err := io.ReadFull(dlr, buf); err != nil {
				errc <- fmt.Errorf("download: %w", err)
				return
			}
			last = time.Now()
			time.Sleep(100 * time.Millisecond)
		}
		lastSecond("download", last)
	}()

	ul, _ := upgrade(t, addr, ses.ID, protocol.KindUpload)
	defer ul.Close()
	wg.Add(1)
	go func() { // 16 KiB frames every 100 ms
		defer wg.Done()
		frame := append([]byte{protocol.FrameData, 0, 0, 0, 0, 0, 0x40, 0}, make([]byte, 16<<10)...)
		var last time.Time
		for ctx.Err() == nil {
			_ = ul.SetWriteDeadline(time.Now().Add(2 * time.Second))
			if _, err := ul.Write(frame); err != nil {
				errc <- fmt.Errorf("upload: %w", err)
				return
			}
			last = time.Now()
			time.Sleep(100 * time.Millisecond)
		}
		lastSecond("upload", last)
	}()

	pr, prr := upgrade(t, addr, ses.ID, protocol.KindProbe)
	defer pr.Close()
	wg.Add(1)
	go func() { // a probe every 200 ms, each answered
		defer wg.Done()
		fr := protocol.NewReader(prr, 0)
		var last time.Time
		for seq := uint64(0); ctx.Err() == nil; seq++ {
			_ = pr.SetDeadline(time.Now().Add(2 * time.Second))
			if _, err := pr.Write(protocol.AppendProbe(nil, protocol.Probe{Seq: seq})); err != nil {
				errc <- fmt.Errorf("probe: %w", err)
				return
			}
			if typ, _, err := fr.Next(nil); err != nil || typ != protocol.FrameProbeReply {
				errc <- fmt.Errorf("probe reply %d: type %d, %v", seq, typ, err)
				return
			}
			last = time.Now()
			time.Sleep(200 * time.Millisecond)
		}
		lastSecond("probe", last)
	}()

	ws, _, err := dialWS(t, addr, ses.ID, protocol.KindDownload, "ws", []string{WebSocketSubprotocol})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	wg.Add(1)
	go func() { // one message every 100 ms
		defer wg.Done()
		var last time.Time
		for ctx.Err() == nil {
			_ = ws.SetReadDeadline(time.Now().Add(2 * time.Second))
			typ, _, err := ws.ReadMessage()
			if err != nil || typ != websocket.BinaryMessage {
				errc <- fmt.Errorf("websocket download: type %d, %w", typ, err)
				return
			}
			last = time.Now()
			time.Sleep(100 * time.Millisecond)
		}
		lastSecond("websocket download", last)
	}()

	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	// The server's records agree: no stream ended with an error.
	ul.(*net.TCPConn).CloseWrite()
	dl.Close()
	_ = ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	ws.Close()
	pr.Close()
	for _, f := range fetchReport(t, addr, ses.ID).Flows {
		if f.Error != "" && f.Error != "still running" {
			t.Errorf("%s stream %s: %s", f.Kind, f.Tag, f.Error)
		}
	}
}

func TestConnConfigValidate(t *testing.T) {
	bad := []Config{
		{HeaderTimeout: -time.Second}, {BodyTimeout: time.Nanosecond}, {IdleTimeout: -1},
		{WriteTimeout: time.Second}, {MaxConnsPerIP: -1}, {MaxConns: -5},
		{TokenFailRate: -1}, {TokenFailBurst: -1},
	}
	if lim, ok := fdLimit(); ok {
		bad = append(bad, Config{MaxConns: lim})
	}
	for _, c := range bad {
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) accepted", c)
		}
	}
	// The defaults fit whatever the descriptor limit.
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if lim, ok := fdLimit(); ok && s.cfg.MaxConns+s.cfg.MaxConcurrent*s.cfg.MaxStreams+fdReserve > lim {
		t.Errorf("default max conns %d overflow the fd limit %d", s.cfg.MaxConns, lim)
	}
}

// TestRefusalsBounded: while maxRefusing refusals are being answered, a
// further refused connection is closed at once without an answer, so a
// flood cannot hold more descriptors than the caps allow; with a slot free,
// the refusal is answered with its 503.
func TestRefusalsBounded(t *testing.T) {
	l := newConnLimiter(0, 0, slog.New(slog.DiscardHandler)) // every connection over the cap
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := l.listener(ln)
	defer cl.Close()
	go func() { _, _ = cl.Accept() }() // returns when cl closes
	read := func() string {
		t.Helper()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		got, err := io.ReadAll(c)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("refused connection neither answered nor closed: %q", got)
		}
		return string(got)
	}
	for range maxRefusing {
		l.refusing <- struct{}{}
	}
	if got := read(); got != "" {
		t.Fatalf("with %d refusals in flight: read %q, want a bare close", maxRefusing, got)
	}
	<-l.refusing
	if got := read(); !strings.HasPrefix(got, "HTTP/1.1 503 ") {
		t.Fatalf("with a refusal slot free: read %q, want the 503", got)
	}
}
