package rtcquality

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pion/ice/v4"
	"github.com/pion/logging"
	"github.com/pion/webrtc/v4"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/netns"
)

// testServer mounts the service under one session "s1" that lives for the
// test.
func testServer(t *testing.T, cfg Config) (*Service, string) {
	t.Helper()
	svc := New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	mux := http.NewServeMux()
	ses := Session{ID: "s1", Ctx: ctx}
	mux.HandleFunc("POST /s/{id}/webrtc", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") != ses.ID {
			http.NotFound(w, r)
			return
		}
		svc.HandleOffer(w, r, ses)
	})
	mux.HandleFunc("POST /s/{id}/webrtc/records", func(w http.ResponseWriter, r *http.Request) { svc.HandleRecords(w, r, ses) })
	hs := httptest.NewServer(mux)
	t.Cleanup(func() { hs.Close(); cancel(); svc.Close() })
	return svc, hs.URL + "/s/s1"
}

func post(t *testing.T, url, ctype string, body []byte) (int, []byte) {
	t.Helper()
	r, err := http.Post(url, ctype, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(r.Body)
	return r.StatusCode, b.Bytes()
}

// client is a pion peer playing the page's part.
type client struct {
	pc        *webrtc.PeerConnection
	ctl, data *webrtc.DataChannel
	ctlIn     chan ctlMsg
	recs      chan Record
	epoch     time.Time
}

func newClient(t *testing.T) *client {
	t.Helper()
	se := webrtc.SettingEngine{}
	lf := logging.NewDefaultLoggerFactory()
	lf.DefaultLogLevel = logging.LogLevelDisabled
	se.LoggerFactory = lf
	se.SetICEMulticastDNSMode(ice.MulticastDNSModeDisabled)
	se.SetIncludeLoopbackCandidate(true)
	se.SetNetworkTypes([]webrtc.NetworkType{webrtc.NetworkTypeUDP4})
	se.SetIPFilter(func(ip net.IP) bool { return ip.IsLoopback() })
	// Like the server, read with a large socket buffer (the test's
	// figures are about the code, not the kernel's default buffer).
	mux, err := openMux(netip.MustParseAddr("127.0.0.1"), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mux.Close() })
	se.SetICEUDPMux(mux)
	pc, err := webrtc.NewAPI(webrtc.WithSettingEngine(se)).NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Close() })
	c := &client{pc: pc, ctlIn: make(chan ctlMsg, 16), recs: make(chan Record, 1<<20), epoch: time.Now()}
	if c.ctl, err = pc.CreateDataChannel(labelCtl, nil); err != nil {
		t.Fatal(err)
	}
	c.ctl.OnMessage(func(m webrtc.DataChannelMessage) {
		var x ctlMsg
		if err := json.Unmarshal(m.Data, &x); err == nil {
			c.ctlIn <- x
		}
	})
	ordered, zero := false, uint16(0)
	if c.data, err = pc.CreateDataChannel(labelData, &webrtc.DataChannelInit{Ordered: &ordered, MaxRetransmits: &zero}); err != nil {
		t.Fatal(err)
	}
	// Like the page: record arrivals, acknowledge every 8th, or any after
	// 5 ms without an acknowledgement.
	var next uint32
	var n int
	var lastAck float64
	c.data.OnMessage(func(m webrtc.DataChannelMessage) {
		now := c.ms()
		if seq, s, ok := parseHeader(m.Data, phaseDown); ok {
			c.recs <- Record{Seq: seq, SendMs: s, RecvMs: now}
			next = max(next, seq+1)
			if n++; n%8 == 0 || now-lastAck > 5 {
				lastAck = now
				b := make([]byte, headerLen)
				putHeader(b, phaseAck, next, now)
				_ = c.data.Send(b)
			}
		}
	})
	return c
}

func (c *client) ms() float64 { return float64(time.Since(c.epoch)) / 1e6 }

func (c *client) connect(t *testing.T, url string) {
	t.Helper()
	offer, err := c.pc.CreateOffer(nil)
	if err != nil {
		t.Fatal(err)
	}
	done := webrtc.GatheringCompletePromise(c.pc)
	if err := c.pc.SetLocalDescription(offer); err != nil {
		t.Fatal(err)
	}
	<-done
	body, _ := json.Marshal(Description{Type: "offer", SDP: c.pc.LocalDescription().SDP})
	code, reply := post(t, url+"/webrtc", "application/json", body)
	if code != 200 {
		t.Fatalf("offer: %d %s", code, reply)
	}
	var ans Description
	if err := json.Unmarshal(reply, &ans); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(ans.SDP, "typ srflx") || strings.Contains(ans.SDP, "typ relay") || !strings.Contains(ans.SDP, "127.0.0.1") {
		t.Fatalf("answer candidates are not host candidates on 127.0.0.1:\n%s", ans.SDP)
	}
	opened := make(chan struct{})
	c.data.OnOpen(func() { close(opened) })
	if err := c.pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeAnswer, SDP: ans.SDP}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-opened:
	case <-time.After(10 * time.Second):
		t.Fatal("data channel did not open within 10 s")
	}
}

func (c *client) ctlSend(t *testing.T, m ctlMsg) {
	b, _ := json.Marshal(m)
	if err := c.ctl.SendText(string(b)); err != nil {
		t.Fatal(err)
	}
}

func (c *client) expect(t *testing.T, op string) ctlMsg {
	t.Helper()
	select {
	case m := <-c.ctlIn:
		if m.Op != op {
			t.Fatalf("control: want %q, got %+v", op, m)
		}
		return m
	case <-time.After(10 * time.Second):
		t.Fatalf("control: no %q within 10 s", op)
	}
	return ctlMsg{}
}

// upload sends like the page: refill on buffered-amount-low, for dur.
func (c *client) upload(t *testing.T, size int, dur time.Duration) (int, float64) {
	low := make(chan struct{}, 1)
	c.data.SetBufferedAmountLowThreshold(sendLow)
	c.data.OnBufferedAmountLow(func() {
		select {
		case low <- struct{}{}:
		default:
		}
	})
	start := time.Now()
	seq := 0
	for time.Since(start) < dur {
		for c.data.BufferedAmount() < sendHigh && time.Since(start) < dur {
			b := make([]byte, size)
			putHeader(b, phaseUp, uint32(seq), c.ms())
			if err := c.data.Send(b); err != nil {
				t.Fatal(err)
			}
			seq++
		}
		select {
		case <-low:
		case <-time.After(dur):
		}
	}
	return seq, time.Since(start).Seconds()
}

func checkDir(t *testing.T, d *model.WebRTCDirection, dir string) {
	t.Helper()
	if d == nil {
		t.Fatalf("%s: no result", dir)
	}
	t.Logf("%s: sent %d received %d lost %d (%.2f%%) goodput %.1f Mbit/s jitter %.3f ms reordered %d periods %d len %+v",
		dir, d.Sent, d.Received, d.Lost, d.LossPct, d.GoodputBps/1e6, d.JitterMs, d.Reordering.Reordered, d.LossPattern.Periods, d.LossPattern.PeriodLength)
	if d.Direction != dir || !d.SentKnown || d.Sent < 100 || d.Received < 100 || d.GoodputBps <= 0 {
		t.Fatalf("%s: implausible %+v", dir, d)
	}
	if d.Lost != d.Sent-d.Received || d.LossPattern.Lost != d.Lost || d.LossPattern.Packets != d.Sent {
		t.Fatalf("%s: inconsistent counts %+v", dir, d)
	}
	// pion on loopback with a 1 MiB queue: messages can only be lost to
	// a full socket buffer; allow a little, not a broken test.
	if d.LossPct > 5 {
		t.Fatalf("%s: %.1f%% loss on loopback", dir, d.LossPct)
	}
}

// pairCounts is the client's datagrams sent and received on its candidate
// pair (the one that carried the most), as the page reads them.
func (c *client) pairCounts(t *testing.T) (sent, recv int) {
	t.Helper()
	best := -1
	for _, st := range c.pc.GetStats() {
		if cp, ok := st.(webrtc.ICECandidatePairStats); ok && int(cp.PacketsSent+cp.PacketsReceived) > best {
			best, sent, recv = int(cp.PacketsSent+cp.PacketsReceived), int(cp.PacketsSent), int(cp.PacketsReceived)
		}
	}
	if best < 0 {
		t.Fatal("no candidate pair in the client's stats")
	}
	return sent, recv
}

// checkDatagrams compares a direction's datagram counts with the client's
// own; every datagram lost on loopback must be one that was counted:
// drops is what the kernel (a receive buffer that overflowed on a busy
// machine) and the receiver's pion stack before its count (stackDrops)
// dropped over the direction, give or take the odd control packet between
// the windows.
func checkDatagrams(t *testing.T, d *model.WebRTCDirection, clientCount, drops int) {
	t.Helper()
	g := d.Datagrams
	if g == nil {
		t.Fatalf("%s: no datagram counts (client counted %d)", d.Direction, clientCount)
	}
	t.Logf("%s: datagrams sent %d received %d (%.3f%% lost); messages %d", d.Direction, g.Sent, g.Received, g.LossPct, d.Sent)
	mine := g.Received
	if d.Direction == dirUpload {
		mine = g.Sent
	}
	if mine != clientCount || g.Sent < d.Received || g.Received < d.Received || g.Sent-g.Received > 5+drops || g.Received-g.Sent > 5 {
		t.Errorf("%s: datagrams %+v, client counted %d, %d messages received, %d counted drops", d.Direction, g, clientCount, d.Received, drops)
	}
}

// hostUDPDrops is the UDP datagrams this namespace's kernel dropped so far.
func hostUDPDrops(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/net/snmp")
	if err != nil {
		t.Fatal(err)
	}
	n, err := netns.UDPDrops(b)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestLoopbackBothDirections(t *testing.T) {
	for _, port := range []int{0, freeUDPPort(t)} {
		t.Run(fmt.Sprintf("port=%d", port), func(t *testing.T) {
			svc, url := testServer(t, Config{Port: port})
			c := newClient(t)
			c.connect(t, url)
			const size = DefaultMessage
			c.ctlSend(t, ctlMsg{Op: "start", Dir: dirUpload, DurationS: 1, Size: size})
			c.expect(t, "ready")
			// Like the page: the datagrams the pair sent while sending.
			drops0 := hostUDPDrops(t)
			sent0, _ := c.pairCounts(t)
			sent, sendS := c.upload(t, size, time.Second)
			time.Sleep(100 * time.Millisecond) // the queue drains
			sent1, _ := c.pairCounts(t)
			datagrams := sent1 - sent0
			c.ctlSend(t, ctlMsg{Op: "end", Dir: dirUpload, Sent: &sent, SendS: sendS, Datagrams: &datagrams})
			done := c.expect(t, "done")
			checkDir(t, done.Result, dirUpload)
			if done.Result.Sent != sent {
				t.Fatalf("upload: sent %d, server says %d", sent, done.Result.Sent)
			}
			kernel := hostUDPDrops(t) - drops0
			svc.mu.Lock()
			p := svc.peers["s1"]
			svc.mu.Unlock()
			p.mu.Lock()
			stack := p.upDrops
			p.mu.Unlock()
			t.Logf("upload: %d kernel drops, the server's pion stack dropped %d before its count, %d after", kernel, stack[0], stack[1])
			checkDatagrams(t, done.Result, datagrams, kernel+stack[0])
			// Unordered without retransmissions on loopback: a message lost
			// is a datagram the kernel or the server's stack dropped.
			if done.Result.Lost > kernel+stack[0]+stack[1] {
				t.Errorf("upload: %d messages lost, %d kernel and %d+%d stack drops", done.Result.Lost, kernel, stack[0], stack[1])
			}
			// The result says that the server dropped some, and only then.
			if errs := svc.Result("s1").Errors; (len(errs) > 0) != (stack[0]+stack[1] > 0) {
				t.Errorf("upload: %d+%d stack drops, result errors %q", stack[0], stack[1], errs)
			}

			drops0 = hostUDPDrops(t)
			_, recv0 := c.pairCounts(t)
			c.ctlSend(t, ctlMsg{Op: "start", Dir: dirDownload, DurationS: 1, Size: size})
			c.expect(t, "ready")
			end := c.expect(t, "end")
			time.Sleep(300 * time.Millisecond)
			_, recv1 := c.pairCounts(t)
			var body []byte
			for n := len(c.recs); n > 0; n-- {
				r := <-c.recs
				var b [recordLen]byte
				binary.LittleEndian.PutUint32(b[:], r.Seq)
				binary.LittleEndian.PutUint64(b[4:], math.Float64bits(r.SendMs))
				binary.LittleEndian.PutUint64(b[12:], math.Float64bits(r.RecvMs))
				body = append(body, b[:]...)
			}
			code, reply := post(t, fmt.Sprintf("%s/webrtc/records?datagrams=%d", url, recv1-recv0), "application/octet-stream", body)
			if code != 200 {
				t.Fatalf("records: %d %s", code, reply)
			}
			var res model.WebRTCResult
			if err := json.Unmarshal(reply, &res); err != nil {
				t.Fatal(err)
			}
			checkDir(t, res.Download, dirDownload)
			checkDatagrams(t, res.Download, recv1-recv0, hostUDPDrops(t)-drops0)
			if res.Download.Sent != *end.Sent || res.MessageBytes != size || !strings.Contains(res.Pair, "127.0.0.1") {
				t.Fatalf("download: %+v", res)
			}
			if got := svc.Result("s1"); got == nil || got.Upload == nil || got.Download == nil {
				t.Fatalf("Result: %+v", got)
			}
			// A second set of records is refused.
			if code, _ := post(t, url+"/webrtc/records", "application/octet-stream", body); code != http.StatusConflict {
				t.Fatalf("second records: %d", code)
			}
		})
	}
}

func freeUDPPort(t *testing.T) int {
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

func TestBadInput(t *testing.T) {
	_, url := testServer(t, Config{})
	for _, tc := range []struct {
		name, body string
		want       int
	}{
		{"not json", "{", 400},
		{"answer", `{"type":"answer","sdp":"v=0"}`, 400},
		{"empty", `{"type":"offer"}`, 400},
		{"garbage sdp", `{"type":"offer","sdp":"v=0\r\nthis is not sdp\r\n"}`, 400},
		{"no media", `{"type":"offer","sdp":"v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\n"}`, 400},
	} {
		if code, b := post(t, url+"/webrtc", "application/json", []byte(tc.body)); code != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, code, b, tc.want)
		}
	}
	if code, _ := post(t, url+"/webrtc/records", "application/octet-stream", make([]byte, 20)); code != 404 && code != 409 {
		t.Errorf("records without a test: %d", code)
	}
	_, off := testServer(t, Config{Port: -1})
	if code, _ := post(t, off+"/webrtc", "application/json", []byte(`{"type":"offer","sdp":"v=0"}`)); code != 503 {
		t.Errorf("disabled: %d", code)
	}
}

// Control messages a page should not send are answered with an error and
// do not break the test.
func TestBadControl(t *testing.T) {
	_, url := testServer(t, Config{MaxDirection: 2 * time.Second})
	c := newClient(t)
	c.connect(t, url)
	_ = c.ctl.Send([]byte{1, 2, 3})
	c.expect(t, "error")
	_ = c.ctl.SendText(`{"op":"start","dir":"upload","duration_s":60,"size":1100}`)
	c.expect(t, "error")
	_ = c.ctl.SendText(`{"op":"start","dir":"upload","duration_s":1,"size":99999}`)
	c.expect(t, "error")
	_ = c.ctl.SendText(`{"op":"dance"}`)
	c.expect(t, "error")
	// Garbage on the data channel during an upload is counted, not kept.
	c.ctlSend(t, ctlMsg{Op: "start", Dir: dirUpload, DurationS: 0.3, Size: 100})
	c.expect(t, "ready")
	_ = c.data.Send([]byte("short"))
	_ = c.data.SendText("text")
	b := make([]byte, 100)
	putHeader(b, phaseUp, 0, c.ms())
	_ = c.data.Send(b)
	one := 1
	c.ctlSend(t, ctlMsg{Op: "end", Dir: dirUpload, Sent: &one, SendS: 0.1})
	d := c.expect(t, "done").Result
	if d.Received != 1 || d.Malformed != 2 || d.Lost != 0 {
		t.Fatalf("upload with garbage: %+v", d)
	}
}

// The drop counter counts pion's two drop messages on their scopes and
// nothing else.
func TestStackDrops(t *testing.T) {
	d := &stackDrops{}
	ice, mux, other := d.NewLogger("ice"), d.NewLogger("mux"), d.NewLogger("sctp")
	ice.Warnf(iceDropFormat, errors.New(iceDropErr))
	ice.Warnf(iceDropFormat, errors.New(iceDropErr))
	ice.Warnf(iceDropFormat, errors.New("io: read/write on closed pipe"))
	ice.Warnf("Discarded message from %s, not a valid remote candidate", "127.0.0.1:9")
	other.Warnf(iceDropFormat, errors.New(iceDropErr))
	mux.Infof(muxDropFormat)
	mux.Warnf(muxDropFormat)
	ice.Infof(muxDropFormat)
	if i, m := d.total(); i != 2 || m != 1 {
		t.Fatalf("drops: ice %d mux %d, want 2 and 1", i, m)
	}
}
