package iperf3

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// testServer is a Server on an ephemeral loopback port, TCP and UDP.
type testServer struct {
	*Server
	port  int
	mu    sync.Mutex
	tests []*Test
}

func startServer(t testing.TB, opts Options) *testServer {
	t.Helper()
	ts := &testServer{}
	if opts.Admit == nil {
		opts.Admit = func(net.Addr) (func(), error) { return func() {}, nil }
	}
	opts.Done = func(x *Test) {
		ts.mu.Lock()
		ts.tests = append(ts.tests, x)
		ts.mu.Unlock()
	}
	opts.Logf = t.Logf
	var ln net.Listener
	var pc *net.UDPConn
	for range 20 { // the UDP port may be taken by someone else: try another
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		pc, err = ListenUDP(l.Addr().String())
		if err == nil {
			ln = l
			break
		}
		l.Close()
	}
	if ln == nil {
		t.Fatal("no port free for both TCP and UDP")
	}
	ts.Server = NewServer(opts)
	ts.port = ln.Addr().(*net.TCPAddr).Port
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ts.Serve(ctx, ln, pc) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Error(err)
			}
		case <-time.After(30 * time.Second):
			t.Error("server did not stop")
		}
	})
	return ts
}

func (ts *testServer) records() []*Test {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([]*Test(nil), ts.tests...)
}

func needIperf3(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("iperf3")
	if err != nil {
		t.Skip("iperf3 is not installed (the Makefile installs Debian's): ", err)
	}
	return p
}

// iperfJSON is the part of iperf3 -J's output the tests read.
type iperfJSON struct {
	Start struct {
		TestStart struct {
			Protocol   string `json:"protocol"`
			NumStreams int    `json:"num_streams"`
			Omit       int    `json:"omit"`
			Duration   int    `json:"duration"`
			Reverse    int    `json:"reverse"`
			Bidir      int    `json:"bidir"`
			Bytes      int64  `json:"bytes"`
			Blksize    int    `json:"blksize"`
		} `json:"test_start"`
	} `json:"start"`
	Intervals []json.RawMessage `json:"intervals"`
	End       struct {
		Streams []struct {
			Sender   *iperfSum `json:"sender"`
			Receiver *iperfSum `json:"receiver"`
			UDP      *iperfSum `json:"udp"`
		} `json:"streams"`
		SumSent          *iperfSum `json:"sum_sent"`
		SumReceived      *iperfSum `json:"sum_received"`
		SumSentBidir     *iperfSum `json:"sum_sent_bidir_reverse"`
		SumReceivedBidir *iperfSum `json:"sum_received_bidir_reverse"`
		Sum              *iperfSum `json:"sum"`
		CPU              struct {
			RemoteTotal float64 `json:"remote_total"`
		} `json:"cpu_utilization_percent"`
		SenderTCPCongestion   string `json:"sender_tcp_congestion"`
		ReceiverTCPCongestion string `json:"receiver_tcp_congestion"`
	} `json:"end"`
	ServerOutputText string          `json:"server_output_text"`
	ServerOutputJSON json.RawMessage `json:"server_output_json"`
	Error            string          `json:"error"`
}

type iperfSum struct {
	Socket        int     `json:"socket"`
	Start         float64 `json:"start"`
	End           float64 `json:"end"`
	Seconds       float64 `json:"seconds"`
	Bytes         int64   `json:"bytes"`
	BitsPerSecond float64 `json:"bits_per_second"`
	Retransmits   *int64  `json:"retransmits"`
	Jitter        float64 `json:"jitter_ms"`
	LostPackets   int64   `json:"lost_packets"`
	Packets       int64   `json:"packets"`
	LostPercent   float64 `json:"lost_percent"`
	OutOfOrder    int64   `json:"out_of_order"`
	Sender        bool    `json:"sender"`
}

// runIperf3 runs the iperf3 client with -J against port, bounded in time.
func runIperf3(t testing.TB, port int, limit time.Duration, args ...string) (iperfJSON, error) {
	t.Helper()
	bin := needIperf3(t)
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	all := append([]string{"-c", "127.0.0.1", "-p", strconv.Itoa(port), "-J", "--connect-timeout", "5000"}, args...)
	cmd := exec.CommandContext(ctx, bin, all...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err := cmd.Run()
	var res iperfJSON
	if jerr := json.Unmarshal(out.Bytes(), &res); jerr != nil {
		return res, fmt.Errorf("iperf3 %v: %v; output %q %q", all, errors.Join(err, jerr), out.String(), stderr.String())
	}
	if res.Error != "" {
		return res, fmt.Errorf("iperf3 %v: %s", all, res.Error)
	}
	if err != nil {
		return res, fmt.Errorf("iperf3 %v: %w (%s)", all, err, stderr.String())
	}
	return res, nil
}

// TestOptions runs Debian's iperf3 client with each option against the
// server and checks its -J output against what the server recorded.
func TestOptions(t *testing.T) {
	needIperf3(t)
	ts := startServer(t, Options{})
	cases := []struct {
		name  string
		args  []string
		check func(t *testing.T, r iperfJSON, rec *Test)
	}{
		{"upload", []string{"-t", "2"}, nil},
		{"parallel", []string{"-t", "2", "-P", "3"}, func(t *testing.T, r iperfJSON, rec *Test) {
			if len(r.End.Streams) != 3 || len(rec.Flows) != 3 {
				t.Errorf("streams: client %d, server %d, want 3", len(r.End.Streams), len(rec.Flows))
			}
		}},
		{"reverse", []string{"-t", "2", "-R", "-P", "2"}, func(t *testing.T, r iperfJSON, rec *Test) {
			if r.End.SumSent.Retransmits == nil || *r.End.SumSent.Retransmits < 0 {
				t.Errorf("-R: the server's retransmissions missing: %+v", r.End.SumSent)
			}
		}},
		{"bidir", []string{"-t", "2", "--bidir"}, func(t *testing.T, r iperfJSON, rec *Test) {
			if r.End.SumReceivedBidir == nil || r.End.SumReceivedBidir.Bytes <= 0 {
				t.Errorf("--bidir: no reverse sum: %+v", r.End)
			}
		}},
		{"bytes", []string{"-n", "50M"}, func(t *testing.T, r iperfJSON, rec *Test) {
			if b := r.End.SumSent.Bytes; b < 50<<20 || b > 50<<20+128<<10 {
				t.Errorf("-n 50M sent %d bytes", b)
			}
		}},
		{"reverse-bytes", []string{"-n", "50M", "-R"}, func(t *testing.T, r iperfJSON, rec *Test) {
			if b := r.End.SumSent.Bytes; b < 50<<20 || b > 50<<20+128<<10 {
				t.Errorf("-R -n 50M: server sent %d bytes", b)
			}
		}},
		{"omit", []string{"-t", "2", "-O", "1", "-R"}, func(t *testing.T, r iperfJSON, rec *Test) {
			if s := r.End.SumSent.Seconds; s < 1.8 || s > 2.3 {
				t.Errorf("-O 1 -t 2: the server's span is %.2f s, want about 2", s)
			}
		}},
		{"window-mss-cc-len", []string{"-t", "1", "-w", "256K", "-M", "1400", "-C", "reno", "-l", "64K", "-R"}, func(t *testing.T, r iperfJSON, rec *Test) {
			if r.End.SenderTCPCongestion != "reno" {
				t.Errorf("-C reno -R: the server used %q", r.End.SenderTCPCongestion)
			}
			if rec.Params.Window != 256<<10 || rec.Params.MSS != 1400 || rec.Params.Len != 64<<10 {
				t.Errorf("params: %+v", rec.Params)
			}
		}},
		{"server-output", []string{"-t", "1", "--get-server-output"}, func(t *testing.T, r iperfJSON, rec *Test) {
			if !bytes.Contains([]byte(r.ServerOutputText), []byte("receiver")) {
				t.Errorf("--get-server-output: %q", r.ServerOutputText)
			}
		}},
		{"udp", []string{"-t", "2", "-u", "-b", "20M", "-l", "1400"}, func(t *testing.T, r iperfJSON, rec *Test) {
			s := r.End.Sum
			if s == nil || s.Packets < 3000 || s.LostPercent > 5 {
				t.Errorf("-u -b 20M: %+v", s)
			}
		}},
		{"udp-omit", []string{"-t", "2", "-O", "1", "-u", "-b", "10M", "-l", "1400", "-P", "3"}, func(t *testing.T, r iperfJSON, rec *Test) {
			// iperf3 -s gives the receiver's count after the omitted
			// second, the sender's within 1 %.
			snt, rcv := r.End.SumSent, r.End.SumReceived
			if snt == nil || rcv == nil || snt.Packets < 4000 || math.Abs(float64(rcv.Packets-snt.Packets)) > 0.01*float64(snt.Packets) {
				t.Errorf("-u -O 1: sent %+v received %+v", snt, rcv)
			}
		}},
		{"udp-reverse-64", []string{"-t", "2", "-u", "-b", "20M", "-l", "1400", "-R", "--udp-counters-64bit", "-P", "2"}, func(t *testing.T, r iperfJSON, rec *Test) {
			s := r.End.Sum
			if s == nil || s.Packets < 6000 || s.LostPercent > 5 {
				t.Errorf("-u -R: %+v", s)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := len(ts.records())
			r, err := runIperf3(t, ts.port, 40*time.Second, c.args...)
			if err != nil {
				t.Fatal(err)
			}
			rec := waitRecord(t, ts, before)
			if rec.Err != nil {
				t.Fatalf("server: %v", rec.Err)
			}
			if c.check != nil {
				c.check(t, r, rec)
			}
			agree(t, r, rec)
		})
	}
}

// waitRecord waits for the test after the first n the server recorded.
func waitRecord(t *testing.T, ts *testServer, n int) *Test {
	t.Helper()
	for range 100 {
		if r := ts.records(); len(r) > n {
			return r[n]
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("the server recorded no test")
	return nil
}

// agree checks the client's receiver figures against the server's own
// count of what it received (2 %): what iperf3 reports as received by the
// server is the server's count; the client's own received bytes are what
// the server's record says it sent, less what was in flight.
func agree(t *testing.T, r iperfJSON, rec *Test) {
	t.Helper()
	var up, down int64
	for _, f := range rec.Flows {
		if f.Kind == "upload" {
			up += f.Bytes
		} else {
			down += f.Bytes
		}
	}
	if rec.Params.Omit > 0 {
		return // the record counts the omitted seconds too
	}
	within := func(name string, client, server int64) {
		if client <= 0 && server <= 0 {
			return
		}
		if d := float64(client-server) / float64(max(server, 1)); d > 0.02 || d < -0.02 {
			t.Errorf("%s: iperf3 says %d bytes, the server's record %d (%.1f%%)", name, client, server, 100*d)
		}
	}
	rcvd := r.End.SumReceived
	sent := r.End.SumSent
	if rec.Params.UDP {
		return // iperf3's UDP sums count datagrams; the streams' bytes are checked by Packets
	}
	switch {
	case rec.Params.Bidirectional:
		within("client to server, received", rcvd.Bytes, up)
		within("server to client, sent", r.End.SumSentBidir.Bytes, down)
	case rec.Params.Reverse:
		within("server to client, sent", sent.Bytes, down)
		within("server to client, received", rcvd.Bytes, down)
	default:
		// What the client sent and the server did not read before
		// TEST_END is lost at both servers alike: received is compared.
		within("client to server, received", rcvd.Bytes, up)
	}
}

// TestBusy: a server whose slots are full answers ACCESS_DENIED, which
// iperf3 reports as a busy server.
func TestBusy(t *testing.T) {
	ts := startServer(t, Options{Admit: func(net.Addr) (func(), error) { return nil, errors.New("full") }})
	_, err := runIperf3(t, ts.port, 20*time.Second, "-t", "1")
	if err == nil || !strings.Contains(err.Error(), "busy") {
		t.Fatalf("want iperf3's busy error, got %v", err)
	}
}

// TestClientDies: a client killed mid-test, or one that stalls, frees its
// slot within bounded time.
func TestClientDies(t *testing.T) {
	bin := needIperf3(t)
	var slots atomic.Int64
	ts := startServer(t, Options{SetupTimeout: 2 * time.Second, Admit: func(net.Addr) (func(), error) {
		slots.Add(1)
		return func() { slots.Add(-1) }, nil
	}})
	for _, args := range [][]string{{"-t", "30"}, {"-t", "30", "-R"}, {"-t", "30", "-u", "-b", "10M"}} {
		cmd := exec.Command(bin, append([]string{"-c", "127.0.0.1", "-p", strconv.Itoa(ts.port)}, args...)...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1500 * time.Millisecond)
		if slots.Load() != 1 {
			t.Errorf("%v: %d slots held while running", args, slots.Load())
		}
		cmd.Process.Kill()
		cmd.Wait()
		deadline := time.Now().Add(5 * time.Second)
		for slots.Load() != 0 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if slots.Load() != 0 {
			t.Fatalf("%v: slot still held 5 s after the client died", args)
		}
	}
	// A client that sends its cookie and parameters, then nothing.
	c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(ts.port)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write(bytes.Repeat([]byte("a"), CookieSize))
	start := time.Now()
	var b [1]byte
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	c.Read(b[:])
	WriteJSON(c, map[string]any{"tcp": true, "time": 10, "parallel": 1})
	for slots.Load() != 0 && time.Since(start) < 10*time.Second {
		time.Sleep(20 * time.Millisecond)
	}
	if slots.Load() != 0 {
		t.Fatal("a client that never opened its streams still holds its slot after 10 s")
	}
}

// TestMalformed: bad cookies, lengths and parameters get SERVER_ERROR or
// a closed connection, never an allocation of what was announced.
func TestMalformed(t *testing.T) {
	ts := startServer(t, Options{SetupTimeout: 2 * time.Second})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ts.port))
	for name, msg := range map[string][]byte{
		"short cookie":   []byte("abc"),
		"huge length":    append(bytes.Repeat([]byte("b"), CookieSize), 0xff, 0xff, 0xff, 0xff),
		"not json":       append(append(bytes.Repeat([]byte("c"), CookieSize), 0, 0, 0, 3), "{{{"...),
		"parallel 10000": jsonMsg(map[string]any{"tcp": true, "time": 1, "parallel": 10000}),
		"len 1e12":       jsonMsg(map[string]any{"tcp": true, "time": 1, "len": 1e12}),
		"time -5":        jsonMsg(map[string]any{"tcp": true, "time": -5}),
		"endless":        jsonMsg(map[string]any{"tcp": true, "time": 0}),
	} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.Write(msg)
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		got, _ := io.ReadAll(c)
		c.Close()
		if len(got) > 0 && State(int8(got[0])) != ParamExchange {
			t.Errorf("%s: first state %v", name, State(int8(got[0])))
		}
		if len(got) > 1 && State(int8(got[1])) != ServerError {
			t.Errorf("%s: answered %v, want SERVER_ERROR", name, State(int8(got[1])))
		}
	}
	// The server still serves.
	if _, err := runIperf3(t, ts.port, 20*time.Second, "-t", "1"); err != nil {
		t.Fatal(err)
	}
}

func jsonMsg(v any) []byte {
	var b bytes.Buffer
	b.Write(bytes.Repeat([]byte("d"), CookieSize))
	WriteJSON(&b, v)
	return b.Bytes()
}

// FuzzParams: any parameter blob is either refused or bounded.
func FuzzParams(f *testing.F) {
	f.Add([]byte(`{"tcp":true,"omit":0,"time":10,"parallel":1,"len":131072,"client_version":"3.12"}`))
	f.Add([]byte(`{"udp":true,"time":2,"parallel":4,"bandwidth":1000000,"udp_counters_64bit":1}`))
	f.Add([]byte(`{"tcp":true,"num":1e300,"parallel":1e9}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var buf bytes.Buffer
		buf.Write([]byte{0, 0, 0, 0})
		binary.BigEndian.PutUint32(buf.Bytes(), uint32(len(b)))
		buf.Write(b)
		var p Params
		if err := ReadJSON(&buf, MaxJSON/16, &p); err != nil {
			return
		}
		c, err := p.Check()
		if err != nil {
			return
		}
		if c.Parallel < 1 || c.Parallel > MaxStreams || c.Len < 1 || c.Len > MaxTCPLen || c.Time > MaxTime ||
			c.Window > MaxWindow || c.Omit > MaxOmit || c.Bandwidth > MaxBandwidth {
			t.Fatalf("unbounded: %+v", c)
		}
	})
}

// FuzzUDPHeader: any datagram parses or is refused, never panics.
func FuzzUDPHeader(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3}, false)
	f.Fuzz(func(t *testing.T, b []byte, c64 bool) {
		h, err := ParseUDPHeader(b, c64)
		if err != nil {
			return
		}
		out := make([]byte, HeaderLen(c64))
		h.Put(out, c64)
		if !bytes.Equal(out, b[:len(out)]) {
			t.Fatalf("round trip %x → %x", b[:len(out)], out)
		}
	})
}

func TestTCPUpload(t *testing.T) {
	ts := startServer(t, Options{})
	res, err := runIperf3(t, ts.port, 30*time.Second, "-t", "2")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("sent %.0f received %.0f bit/s", res.End.SumSent.BitsPerSecond, res.End.SumReceived.BitsPerSecond)
	if res.End.SumReceived.Bytes <= 0 {
		t.Fatalf("no bytes received: %+v", res.End)
	}
}

// TestLimits: the server's maximum duration and bytes end a test with
// SERVER_TERMINATE, which iperf3 reports, and the record says which.
func TestLimits(t *testing.T) {
	for _, c := range []struct {
		name  string
		opts  Options
		limit string
	}{
		{"duration", Options{MaxDuration: 2 * time.Second}, "max_duration"},
		{"bytes", Options{MaxBytes: 200 << 20}, "max_bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ts := startServer(t, c.opts)
			start := time.Now()
			_, err := runIperf3(t, ts.port, 30*time.Second, "-t", "20", "-b", "1G")
			if err == nil || !strings.Contains(err.Error(), "terminated") {
				t.Fatalf("want iperf3's 'the server has terminated', got %v", err)
			}
			if el := time.Since(start); el > 8*time.Second {
				t.Errorf("the test ran %s", el)
			}
			rec := waitRecord(t, ts, 0)
			if rec.Ended != c.limit {
				t.Errorf("record ended %q, want %q", rec.Ended, c.limit)
			}
		})
	}
}

// FuzzControl feeds any bytes to a control connection: the server ends
// it within its setup timeout whatever they are.
func FuzzControl(f *testing.F) {
	f.Add(jsonMsg(map[string]any{"tcp": true, "time": 1, "parallel": 1}))
	f.Add([]byte("short"))
	f.Add(append(bytes.Repeat([]byte("e"), CookieSize), 0x7f, 0xff, 0xff, 0xff))
	f.Fuzz(func(t *testing.T, in []byte) {
		srv := NewServer(Options{SetupTimeout: 50 * time.Millisecond, MaxDuration: 200 * time.Millisecond,
			Admit: func(net.Addr) (func(), error) { return func() {}, nil }})
		a, b := net.Pipe()
		done := make(chan struct{})
		go func() {
			srv.handle(context.Background(), a, 0)
			close(done)
		}()
		go io.Copy(io.Discard, b)
		go func() {
			b.SetWriteDeadline(time.Now().Add(time.Second))
			b.Write(in)
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("the server held a control connection past its timeouts")
		}
		b.Close()
	})
}

// TestGreetingsBounded: connections that never send a cookie are capped
// per address; the server keeps serving, and they are gone within the
// setup timeout.
func TestGreetingsBounded(t *testing.T) {
	ts := startServer(t, Options{SetupTimeout: time.Second})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ts.port))
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range MaxGreetingsPerIP + 20 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	time.Sleep(200 * time.Millisecond)
	ts.Server.mu.Lock()
	n := ts.greetings
	ts.Server.mu.Unlock()
	if n > MaxGreetingsPerIP {
		t.Fatalf("%d connections waiting for their cookie, cap %d", n, MaxGreetingsPerIP)
	}
	time.Sleep(1500 * time.Millisecond)
	ts.Server.mu.Lock()
	n = ts.greetings
	ts.Server.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d silent connections still held after the setup timeout", n)
	}
	if _, err := runIperf3(t, ts.port, 20*time.Second, "-t", "1"); err != nil {
		t.Fatal(err)
	}
}

func TestRecvBufSize(t *testing.T) {
	for _, tc := range []struct{ n, size, want int }{
		{recvBufStart, recvBufStart, 2 * recvBufStart}, // a full read doubles it
		{recvBufStart - 1, recvBufStart, recvBufStart}, // a short one keeps it
		{recvBufMax, recvBufMax, recvBufMax},           // up to the cap
		{300 << 10, 300 << 10, recvBufMax},             // a -l between stops at the cap
		{1 << 20, 1 << 20, 1 << 20},                    // a -l above the cap is kept
	} {
		if got := recvBufSize(tc.n, tc.size); got != tc.want {
			t.Errorf("recvBufSize(%d, %d) = %d, want %d", tc.n, tc.size, got, tc.want)
		}
	}
}

// TestBidirStreamsInConnectOrder: iperf3's client opens its --bidir
// streams one after another without waiting, so the server may read the
// second stream's cookie first. The roles follow the order the streams
// connected (the first half the client's senders), not the order their
// cookies were read: here the second stream's cookie comes first, and the
// server must still send on the second stream and not on the first.
func TestBidirStreamsInConnectOrder(t *testing.T) {
	ts := startServer(t, Options{SetupTimeout: 5 * time.Second})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ts.port))
	cookie := bytes.Repeat([]byte("o"), CookieSize)
	ctrl, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ctrl.Close()
	ctrl.SetDeadline(time.Now().Add(10 * time.Second))
	ctrl.Write(cookie)
	var state [1]byte
	if _, err := io.ReadFull(ctrl, state[:]); err != nil { // PARAM_EXCHANGE
		t.Fatal(err)
	}
	if err := WriteJSON(ctrl, map[string]any{"tcp": true, "time": 2, "parallel": 1, "bidirectional": true}); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(ctrl, state[:]); err != nil { // CREATE_STREAMS
		t.Fatal(err)
	}
	var conns [2]net.Conn
	for i := range conns {
		if conns[i], err = net.Dial("tcp", addr); err != nil {
			t.Fatal(err)
		}
		defer conns[i].Close()
	}
	time.Sleep(50 * time.Millisecond) // both accepted, in connect order
	conns[1].Write(cookie)
	time.Sleep(100 * time.Millisecond) // its cookie read first
	conns[0].Write(cookie)
	go io.Copy(io.Discard, ctrl) // TEST_START, TEST_RUNNING, …
	buf := make([]byte, 64<<10)
	conns[1].SetReadDeadline(time.Now().Add(3 * time.Second))
	if n, err := conns[1].Read(buf); n == 0 {
		t.Fatalf("the second stream (the server's sender) got nothing: %v", err)
	}
	conns[0].SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if n, _ := conns[0].Read(buf); n > 0 {
		t.Fatalf("the server sent %d bytes on the first stream, the client's sender", n)
	}
}
