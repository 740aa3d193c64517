package rtcquality

import (
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/metrics"
)

// The wire vectors are also checked by web/test/rtc.test.ts, so page and
// server agree on the bytes.
type wireVectors struct {
	Header struct {
		Phase  byte    `json:"phase"`
		Seq    uint32  `json:"seq"`
		SendMs float64 `json:"send_ms"`
		Size   int     `json:"size"`
		Hex    string  `json:"hex"`
	} `json:"header"`
	Records []struct {
		Seq    uint32  `json:"seq"`
		SendMs float64 `json:"send_ms"`
		RecvMs float64 `json:"recv_ms"`
	} `json:"records"`
	RecordsHex string `json:"records_hex"`
}

func TestWireVectors(t *testing.T) {
	b, err := os.ReadFile("testdata/wire.json")
	if err != nil {
		t.Fatal(err)
	}
	var v wireVectors
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	msg := make([]byte, v.Header.Size)
	putHeader(msg, v.Header.Phase, v.Header.Seq, v.Header.SendMs)
	if got := hex.EncodeToString(msg); got != v.Header.Hex {
		t.Fatalf("header\n got %s\nwant %s", got, v.Header.Hex)
	}
	seq, ms, ok := parseHeader(msg, v.Header.Phase)
	if !ok || seq != v.Header.Seq || ms != v.Header.SendMs {
		t.Fatalf("parse: %d %v %v", seq, ms, ok)
	}
	if _, _, ok := parseHeader(msg, phaseUp); ok {
		t.Fatal("a download message parsed as upload")
	}
	if _, _, ok := parseHeader(msg[:headerLen-1], v.Header.Phase); ok {
		t.Fatal("a short message parsed")
	}
	raw, _ := hex.DecodeString(v.RecordsHex)
	recs, err := DecodeRecords(raw, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(v.Records) {
		t.Fatalf("%d records, want %d", len(recs), len(v.Records))
	}
	for i, r := range v.Records {
		if recs[i] != (Record{r.Seq, r.SendMs, r.RecvMs}) {
			t.Fatalf("record %d: %+v, want %+v", i, recs[i], r)
		}
	}
	if _, err := DecodeRecords(raw[:len(raw)-1], 100); err == nil {
		t.Fatal("a partial record was accepted")
	}
	if _, err := DecodeRecords(raw, 2); err == nil {
		t.Fatal("too many records were accepted")
	}
	nan := make([]byte, recordLen)
	copy(nan[4:], []byte{0, 0, 0, 0, 0, 0, 0xf8, 0x7f})
	if _, err := DecodeRecords(nan, 2); err == nil {
		t.Fatal("a NaN time was accepted")
	}
}

// Analyze must give what the metrics functions give on the same sequence,
// with loss and duplicates counted from sequence numbers.
func TestAnalyze(t *testing.T) {
	// 10 sent; 3 and 4 lost (one period of 2), 7 lost; 6 arrives after 8
	// (reordered); 2 arrives twice; a record beyond "sent" is not counted.
	arr := []uint32{0, 1, 2, 2, 5, 8, 6, 9, 11}
	var recs []Record
	for i, s := range arr {
		recs = append(recs, Record{Seq: s, SendMs: float64(s) * 10, RecvMs: 1000 + float64(i)*10 + float64(s%3)})
	}
	d := Analyze(dirUpload, recs, 10, 1000, 0.1)
	if d.Sent != 10 || d.Received != 7 || d.Lost != 3 || d.Duplicates != 1 || d.Malformed != 1 || d.LossPct != 30 {
		t.Fatalf("counts: %+v", d)
	}
	lost := []bool{false, false, false, true, true, false, false, true, false, false}
	if want := metrics.LossPatternOf(lost, 1); d.LossPattern.Periods != 2 || d.LossPattern.Periods != want.Periods ||
		d.LossPattern.PeriodLength != want.PeriodLength || d.LossPattern.LossDistance != want.LossDistance {
		t.Fatalf("loss pattern %+v, want %+v", d.LossPattern, want)
	}
	if d.Reordering.Reordered != 1 || d.Reordering.MaxExtent != 1 {
		t.Fatalf("reordering %+v", d.Reordering)
	}
	// Jitter over first arrivals in arrival order: 0 1 2 5 8 6 9.
	var s, r []float64
	for i, x := range arr {
		if i == 3 || x == 11 {
			continue
		}
		s, r = append(s, recs[i].SendMs), append(r, recs[i].RecvMs)
	}
	if want := metrics.Jitter3550(s, r); math.Abs(d.JitterMs-want) > 1e-12 || want == 0 {
		t.Fatalf("jitter %v, want %v", d.JitterMs, want)
	}
	// 7 first arrivals over 70 ms (first 1000, last 1070): 6 × 1000 B × 8 / 0.07 s.
	if math.Abs(d.GoodputBps-6*8000/0.07) > 1e-6 || math.Abs(d.SendRateBps-10*8000/0.1) > 1e-6 {
		t.Fatalf("rates: goodput %v send %v", d.GoodputBps, d.SendRateBps)
	}
	// An unknown count uses the highest sequence number + 1.
	u := Analyze(dirDownload, recs, -1, 1000, 0)
	if u.SentKnown || u.Sent != 12 || u.Lost != 12-8 || u.Malformed != 0 {
		t.Fatalf("unknown sent: %+v", u)
	}
	// A huge claimed sequence number cannot allocate without bound.
	h := Analyze(dirDownload, []Record{{Seq: math.MaxUint32}}, -1, 1000, 0)
	if h.Sent != maxSent || h.Malformed != 1 {
		t.Fatalf("huge seq: sent %d malformed %d", h.Sent, h.Malformed)
	}
	if e := Analyze(dirDownload, nil, 0, 1000, 0); e.Sent != 0 || e.LossPct != 0 || e.GoodputBps != 0 {
		t.Fatalf("empty: %+v", e)
	}
}

// The window follows 2 × delivery rate × minimum RTT, and loss on the way
// (acknowledgements that skip sequence numbers) does not shrink it.
func TestWindow(t *testing.T) {
	for _, lossEvery := range []int{0, 20} {
		w := newWindow()
		const rate, rtt = 20000.0, 5 * time.Millisecond // messages/s, seconds
		next := int64(0)
		for i := 0; i < 4000; i++ {
			ts := time.Duration(float64(i) / rate * float64(time.Second))
			w.sent(uint32(i), ts)
			w.highest = int64(i)
			// The acknowledgement of message i arrives one RTT later; with
			// loss, every lossEvery-th message never arrives and is never
			// acknowledged itself, but the next one's ack covers it.
			if lossEvery > 0 && i%lossEvery == 0 {
				continue
			}
			next = int64(i) + 1
			w.acked(next, w.highest, ts+rtt)
		}
		want := int64(2*rate*rtt.Seconds()) + winFloor
		if w.minRTT != rtt || w.size < want*9/10 || w.size > want*11/10 {
			t.Errorf("loss every %d: window %d, min RTT %v; want about %d, %v", lossEvery, w.size, w.minRTT, want, rtt)
		}
	}
	// Nonsense acknowledgements change nothing.
	w := newWindow()
	w.acked(0, 10, time.Second)
	w.acked(5, winRing, time.Second)
	if w.size != 2*winFloor || w.minRTT != -1 {
		t.Fatalf("%+v", w.size)
	}
}
