package report

import (
	"bytes"
	"encoding/binary"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/passive"
)

// synthCapture builds a capture at the client end of a 100 ms RTT path:
// a persistent HTTP/1.1 connection carrying two requests (the first
// response 80 segments, one of them lost before the observer and
// retransmitted), with TCP timestamps and an ACK per two segments.
func synthCapture(t *testing.T) []byte {
	const ms = int64(time.Millisecond)
	type rec struct {
		t    int64
		data []byte
	}
	var out []rec
	var seq [2]uint32 = [2]uint32{1000, 90000}
	var hole uint32
	var clientTS []struct{ t, v int64 } // client timestamps by send time, for the server's echo
	emit := func(t int64, dir int, flags uint8, payload []byte) {
		src, dst, sp, dp := [4]byte{198, 18, 1, 1}, [4]byte{198, 18, 1, 2}, uint16(40000), uint16(80)
		tsval, tsecr := t/ms, int64(0)
		if dir == 1 {
			src, dst, sp, dp = dst, src, dp, sp
			tsval = (t - 50*ms) / ms // sent 50 ms before the observer sees it
			for _, c := range clientTS {
				if c.t <= t-100*ms {
					tsecr = c.v
				}
			}
		} else {
			clientTS = append(clientTS, struct{ t, v int64 }{t, tsval})
			tsecr = (t - 50*ms) / ms
		}
		tcp := make([]byte, 32, 32+len(payload))
		binary.BigEndian.PutUint16(tcp, sp)
		binary.BigEndian.PutUint16(tcp[2:], dp)
		binary.BigEndian.PutUint32(tcp[4:], seq[dir])
		ackNo := seq[dir^1]
		if dir == 0 && hole != 0 {
			ackNo = hole // duplicate ACKs until the hole is filled
		}
		binary.BigEndian.PutUint32(tcp[8:], ackNo)
		tcp[12], tcp[13] = 8<<4, flags
		binary.BigEndian.PutUint16(tcp[14:], 65535)
		copy(tcp[20:], []byte{1, 1, 8, 10})
		binary.BigEndian.PutUint32(tcp[24:], uint32(tsval))
		binary.BigEndian.PutUint32(tcp[28:], uint32(tsecr))
		tcp = append(tcp, payload...)
		ip := make([]byte, 20, 20+len(tcp))
		ip[0] = 0x45
		binary.BigEndian.PutUint16(ip[2:], uint16(20+len(tcp)))
		ip[8], ip[9] = 64, 6
		copy(ip[12:], src[:])
		copy(ip[16:], dst[:])
		out = append(out, rec{t, append(ip, tcp...)})
	}
	const syn, ack, fin, psh = 0x02, 0x10, 0x01, 0x08
	emit(0, 0, syn, nil)
	seq[0]++
	emit(100*ms, 1, syn|ack, nil)
	seq[1]++
	emit(100*ms+ms/10, 0, ack, nil)
	now := 101 * ms
	for i, size := range []int{80 * 1448, 5000} {
		req := []byte("GET /o" + string(rune('0'+i)) + " HTTP/1.1\r\nHost: t.test\r\n\r\n")
		emit(now, 0, ack|psh, req)
		seq[0] += uint32(len(req))
		body := append([]byte("HTTP/1.1 200 OK\r\nContent-Length: "+itoa(size)+"\r\n\r\n"), bytes.Repeat([]byte("x"), size)...)
		tt := now + 100*ms
		var lost []byte
		lostSeq := uint32(0)
		got := 0
		for off := 0; off < len(body); off += 1448 {
			seg := body[off:min(off+1448, len(body))]
			if i == 0 && off == 10*1448 {
				lost, lostSeq, hole = seg, seq[1], seq[1] // lost before the observer
				seq[1] += uint32(len(seg))
				continue
			}
			emit(tt, 1, ack, seg)
			seq[1] += uint32(len(seg))
			got++
			if got%2 == 0 || lost != nil {
				emit(tt+ms/10, 0, ack, nil)
			}
			tt += ms
		}
		if lost != nil {
			high := seq[1]
			seq[1] = lostSeq
			emit(tt+100*ms, 1, ack, lost)
			seq[1], hole = high, 0
			tt += 100 * ms
		}
		emit(tt+ms/10, 0, ack, nil)
		now = tt + 50*ms
	}
	emit(now, 0, fin|ack, nil)
	seq[0]++
	emit(now+100*ms, 1, fin|ack, nil)
	seq[1]++
	emit(now+100*ms+ms/10, 0, ack, nil)

	var cb bytes.Buffer
	w, err := pcapgo.NewNgWriter(&cb, layers.LinkTypeRaw)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1700000000, 0)
	for _, r := range out {
		ci := gopacket.CaptureInfo{Timestamp: t0.Add(time.Duration(r.t)), CaptureLength: len(r.data), Length: len(r.data)}
		if err := w.WritePacket(ci, r.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return cb.Bytes()
}

func TestWriteAnalyzeHTML(t *testing.T) {
	a := passive.New(passive.Config{Interface: -1, KeepSamples: true, TimeSequence: true, Interval: 100 * time.Millisecond})
	if _, err := a.Read(bytes.NewReader(synthCapture(t)), model.CaptureFile{Path: "synthetic.pcapng", DamageOffset: -1}); err != nil {
		t.Fatal(err)
	}
	res := a.Finish(nil)
	if len(res.TCP) != 1 || res.TCP[0].HTTP == nil || res.TCP[0].TimeSeq == nil {
		t.Fatalf("analysis: %+v", res)
	}
	h := res.TCP[0].HTTP
	if h.Requests != 2 || h.Responses != 2 || h.Incomplete != "" || h.CloseBy != "client" || len(res.HTTPPages) != 1 {
		t.Fatalf("HTTP: %+v, pages %+v", h, res.HTTPPages)
	}
	ts := res.TCP[0].TimeSeq
	if ts.Dir != "B>A" || len(ts.Retrans) != 1 || len(ts.Data) < 80 || len(ts.Acks) < 40 {
		t.Fatalf("time sequence: dir %s, %d data, %d retransmitted, %d ACKs", ts.Dir, len(ts.Data), len(ts.Retrans), len(ts.Acks))
	}
	var buf bytes.Buffer
	if err := WriteAnalyzeHTML(&buf, res, a.Samples(nil), AnalyzeOptions{}); err != nil {
		t.Fatal(err)
	}
	doc := buf.String()
	if path := os.Getenv("SONDE_ANALYZE_EXAMPLE"); path != "" { // for viewing
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	checkWellFormed(t, doc)
	checkSelfContained(t, doc)
	for _, want := range []string{"Time-sequence graph", "RTT over time", "Goodput over time", "page load waterfall",
		"ts-side-b", "retransmitted", "receive window", "/o0", "Page loads"} {
		if !strings.Contains(doc, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if n := strings.Count(doc, "<svg"); n != 4 {
		t.Errorf("%d charts, want 4 (RTT, goodput, time-sequence, waterfall)", n)
	}
	// A nil analysis renders a page that says so.
	buf.Reset()
	if err := WriteAnalyzeHTML(&buf, nil, nil, AnalyzeOptions{}); err != nil || !strings.Contains(buf.String(), "no analysis") {
		t.Fatalf("nil analysis: %v", err)
	}
	checkWellFormed(t, buf.String())
}

// TestAnalyzeRTTTruthOverlay: samples with ground truth get a dashed truth
// series beside the estimate; invalid samples are not drawn.
func TestAnalyzeRTTTruthOverlay(t *testing.T) {
	r := &model.Analysis{Schema: model.AnalyzeSchema, TCP: []model.TCPConn{{A: "198.18.1.1:1", B: "198.18.1.2:2", IntervalS: 1}}}
	var ss []model.PassiveRTT
	for i := range 50 {
		ss = append(ss, model.PassiveRTT{TimeS: float64(i) / 10, Flow: "198.18.1.1:1 > 198.18.1.2:2", Method: "ts-side-b",
			RTTMs: 20 + float64(i%3), Valid: true, TrueMs: 20})
	}
	ss = append(ss, model.PassiveRTT{TimeS: 1, Flow: "198.18.1.1:1 > 198.18.1.2:2", Method: "seqack-side-b", RTTMs: 900, Flag: "x"})
	var buf bytes.Buffer
	if err := WriteAnalyzeHTML(&buf, r, ss, AnalyzeOptions{}); err != nil {
		t.Fatal(err)
	}
	doc := buf.String()
	checkWellFormed(t, doc)
	if !strings.Contains(doc, "ts-side-b truth") || !strings.Contains(doc, "dashed: ground truth") {
		t.Error("no truth overlay")
	}
	if strings.Contains(doc, ">seqack-side-b<") {
		t.Error("an invalid sample was drawn")
	}
}

// TestAnalyzeHTMLBounded: tables of large captures are cut, with a note.
func TestAnalyzeHTMLBounded(t *testing.T) {
	r := &model.Analysis{Schema: model.AnalyzeSchema}
	for i := range 40 {
		r.TCP = append(r.TCP, model.TCPConn{A: "198.18.1.1:" + itoa(1000+i), B: "198.18.1.2:80", AB: model.TCPDir{DataBytes: uint64(i)},
			HTTP: &model.HTTPConn{Requests: 1, Exchanges: []model.HTTPExchange{{Method: "GET", Path: "/" + itoa(i), RequestS: float64(i) * 3}}}})
		r.HTTPPages = append(r.HTTPPages, model.HTTPPage{Client: "198.18.1.1", StartS: float64(i) * 3})
	}
	var buf bytes.Buffer
	if err := WriteAnalyzeHTML(&buf, r, nil, AnalyzeOptions{MaxRows: 10, TopN: 2}); err != nil {
		t.Fatal(err)
	}
	doc := buf.String()
	checkWellFormed(t, doc)
	for _, want := range []string{"the 10 largest of 40 connections", "the first 10 of 40 connections", "the first 10 of 40 page loads",
		"first 10 of 40 requests", "198.18.1.1:1039 &gt; 198.18.1.2:80"} {
		if !strings.Contains(doc, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	tcp := doc[strings.Index(doc, `<section id="tcp">`):]
	tcp = tcp[:strings.Index(tcp, "</section>")]
	if strings.Contains(tcp, "198.18.1.1:1000 &gt;") {
		t.Error("the smallest connection is listed in the TCP table")
	}
	if n := strings.Count(doc, `<section class="conn">`); n != 2 {
		t.Errorf("%d connections with charts, want TopN = 2", n)
	}
}

// TestAnalyzeTextSpeedLine: the last line of a file analysis gives the
// analyser's speed, a live capture's the arrival rate and the kernel's
// counts. A file that could not be read leaves no file in the result,
// and its text read "captured 0 packets" as if it had been live.
func TestAnalyzeTextSpeedLine(t *testing.T) {
	for _, c := range []struct {
		name string
		r    model.Analysis
		want string
	}{
		{"file", model.Analysis{Files: []model.CaptureFile{{Path: "a.pcap"}}}, "\nanalysed at "},
		{"no file read", model.Analysis{}, "\nanalysed at "},
		{"live", model.Analysis{Live: &model.LiveCapture{Interface: "eth0"}}, "\ncaptured 0 packets in "},
	} {
		var b bytes.Buffer
		if err := WriteAnalyzeText(&b, &c.r); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), c.want) {
			t.Errorf("%s: no %q in\n%s", c.name, c.want, b.String())
		}
		if live := strings.Contains(b.String(), "captured "); live != (c.r.Live != nil) {
			t.Errorf("%s: live line %v in\n%s", c.name, live, b.String())
		}
	}
}
