package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/units"
)

// udpFixture is a two-direction UDP result of one flow.
func udpFixture(lossPct float64) *model.UDPResult {
	start := time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC)
	dir := func(name string, owd float64) model.UDPDirectionStats {
		lost := int(lossPct * 5)
		return model.UDPDirectionStats{Direction: name, Known: true, Sent: 500, Lost: lost, LossPct: lossPct,
			OWDMs: statsOf([]float64{owd, owd + 1, owd + 2}), JitterMs: 0.25}
	}
	return &model.UDPResult{
		Schema: model.UDPSchemaVersion, ID: "u-1", Start: start, End: start.Add(10 * time.Second),
		Config: model.UDPConfig{Server: "198.18.0.2:8080", IntervalUs: 20000, PacketBytes: 64, DurationS: 10},
		Flows: []model.UDPFlow{{
			Name: "default", ReflectorAddr: "198.18.0.2:862", Sent: 500, Replies: 495,
			RTTMs:        statsOf([]float64{20, 21, 22, 25}),
			RTTHistogram: []model.HistBin{{Lo: 20, Hi: 21, Count: 3}, {Lo: 21, Hi: 22, Count: 9}},
			Forward:      dir("forward", 10), Backward: dir("backward", 11),
		}},
		Notes: []string{"a <note> & more"},
	}
}

func analysisFixture(conns int) *model.Analysis {
	r := &model.Analysis{Schema: model.AnalyzeSchema, Packets: 1000, Bytes: 1 << 20, DurationS: 2.5,
		Files: []model.CaptureFile{{Path: "x.pcap", Format: "pcap", Packets: 1000, DamageOffset: -1}}}
	for i := range conns {
		r.TCP = append(r.TCP, model.TCPConn{A: "198.18.0.1:4000" + string(rune('0'+i)), B: "198.18.0.2:80",
			AB: model.TCPDir{Packets: 10, DataBytes: 1000}, TSFull: model.RTTSummary{Samples: 3, MinMs: 1, MedianMs: float64(10 + i), MaxMs: 30}})
	}
	return r
}

func encode(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func decode(t *testing.T, name string, v any) *Saved {
	t.Helper()
	s, err := Decode(name, encode(t, v))
	if err != nil {
		t.Fatalf("Decode %s: %v", name, err)
	}
	return s
}

// Each schema re-renders through the writer of its command: the same text
// as rendering the decoded result directly.
func TestDecodeDispatch(t *testing.T) {
	for _, tc := range []struct {
		v      any
		schema string
		text   func(*bytes.Buffer, any) error
	}{
		{fullResult(), model.SchemaVersion, func(b *bytes.Buffer, v any) error { return WriteText(b, v.(*model.Result)) }},
		{udpFixture(1), model.UDPSchemaVersion, func(b *bytes.Buffer, v any) error { return WriteUDPText(b, v.(*model.UDPResult)) }},
		{analysisFixture(2), model.AnalyzeSchema, func(b *bytes.Buffer, v any) error { return WriteAnalyzeText(b, v.(*model.Analysis)) }},
	} {
		s := decode(t, tc.schema, tc.v)
		if s.Schema() != tc.schema {
			t.Errorf("schema %s, want %s", s.Schema(), tc.schema)
		}
		var got, want, page bytes.Buffer
		if err := s.WriteText(&got); err != nil {
			t.Fatal(err)
		}
		// Rendered from a JSON round trip of the original, as a saved
		// file is.
		if err := tc.text(&want, s.v); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() || got.Len() == 0 {
			t.Errorf("%s: text differs:\n%s\nwant\n%s", tc.schema, got.String(), want.String())
		}
		if err := s.WriteHTML(&page); err != nil {
			t.Fatal(err)
		}
		checkWellFormed(t, page.String())
		checkSelfContained(t, page.String())
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "not a saved sonde result"},
		{"[1,2]", "not a saved sonde result"},
		{`{"id":"x"}`, `no "schema" field`},
		{`{"schema":"sonde.monitor/v9"}`, `unknown schema "sonde.monitor/v9"`},
		{`{"schema":"sonde.udp/v1","flows":"no"}`, "sonde.udp/v1"},
	} {
		_, err := Decode("f.json", []byte(tc.in))
		var ie *InputError
		if err == nil || !errors.As(err, &ie) || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "f.json: ") {
			t.Errorf("Decode(%q) = %v, want an InputError with %q", tc.in, err, tc.want)
		}
	}
}

func TestCompare(t *testing.T) {
	a, b := fullResult(), fullResult()
	b.Download.GoodputBps = a.Download.GoodputBps / 2
	b.Upload = nil
	saved := []*Saved{decode(t, "before.json", a), decode(t, "after.json", b)}
	var text bytes.Buffer
	if err := WriteCompareText(&text, saved); err != nil {
		t.Fatal(err)
	}
	out := text.String()
	t.Log("\n" + out)
	checkText(t, out)
	for _, want := range []string{"#1  before.json", "#2  after.json", "#2 − #1"} {
		if !strings.Contains(out, want) {
			t.Errorf("comparison lacks %q", want)
		}
	}
	dl := lineWith(out, "download goodput")
	if dl == "" || !strings.Contains(dl, units.FormatRate(a.Download.GoodputBps)) || !strings.Contains(dl, units.FormatRate(b.Download.GoodputBps)) ||
		!strings.Contains(dl, "-"+units.FormatRate(a.Download.GoodputBps/2)+" (-50 %)") {
		t.Errorf("download row: %q", dl)
	}
	// The upload is in the first result only: a dash for the second and
	// for the difference.
	if ul := strings.Fields(lineWith(out, "upload goodput")); len(ul) != 6 || ul[4] != "-" || ul[5] != "-" {
		t.Errorf("upload row: %q", ul)
	}
	var csv bytes.Buffer
	if err := WriteCompareCSV(&csv, saved); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(csv.String(), "\n")
	if lines[0] != "figure,unit,before.json,after.json" {
		t.Errorf("csv head %q", lines[0])
	}
	wantDL := "download goodput,bit/s," + fixedG(a.Download.GoodputBps) + "," + fixedG(b.Download.GoodputBps)
	if !strings.Contains(csv.String(), wantDL+"\n") || !strings.Contains(csv.String(), "upload goodput,bit/s,"+fixedG(a.Upload.GoodputBps)+",\n") {
		t.Errorf("csv lacks %q or the upload row:\n%s", wantDL, csv.String())
	}
	var page bytes.Buffer
	if err := WriteCompareHTML(&page, saved); err != nil {
		t.Fatal(err)
	}
	checkWellFormed(t, page.String())
	checkSelfContained(t, page.String())
	if !strings.Contains(page.String(), "before.json") || !strings.Contains(page.String(), "-50 %") {
		t.Error("HTML comparison lacks a file name or the difference")
	}

	// Kinds do not mix.
	mixed := []*Saved{saved[0], decode(t, "u.json", udpFixture(0))}
	var ie *InputError
	if err := WriteCompareText(&bytes.Buffer{}, mixed); !errors.As(err, &ie) || !strings.Contains(err.Error(), "different kinds") {
		t.Errorf("mixed kinds: %v", err)
	}
}

func TestCompareUDPAndAnalyze(t *testing.T) {
	var out bytes.Buffer
	if err := WriteCompareText(&out, []*Saved{decode(t, "a", udpFixture(0)), decode(t, "b", udpFixture(2))}); err != nil {
		t.Fatal(err)
	}
	if l := lineWith(out.String(), "forward loss"); !strings.Contains(l, "0.00 %") || !strings.Contains(l, "2.00 %") || !strings.Contains(l, "+2.00 points") {
		t.Errorf("loss row %q in\n%s", l, out.String())
	}
	out.Reset()
	if err := WriteCompareText(&out, []*Saved{decode(t, "a", analysisFixture(1)), decode(t, "b", analysisFixture(3)), decode(t, "c", analysisFixture(2))}); err != nil {
		t.Fatal(err)
	}
	if l := lineWith(out.String(), "TCP connections"); !strings.Contains(l, "+2 (+200 %)") || !strings.Contains(l, "+1 (+100 %)") {
		t.Errorf("connections row %q in\n%s", l, out.String())
	}
	if l := lineWith(out.String(), "median of connections"); !strings.Contains(l, "10.0 ms") || !strings.Contains(l, "11.0 ms") {
		t.Errorf("RTT row %q in\n%s", l, out.String())
	}
}

func fixedG(v float64) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestWriteUDPHTML(t *testing.T) {
	var b bytes.Buffer
	if err := WriteUDPHTML(&b, udpFixture(1)); err != nil {
		t.Fatal(err)
	}
	doc := b.String()
	checkWellFormed(t, doc)
	checkSelfContained(t, doc)
	for _, want := range []string{"<svg", "forward OWD ms", "a &lt;note&gt; &amp; more", "sonde udp report, schema sonde.udp/v1", `class="card`} {
		if !strings.Contains(doc, want) {
			t.Errorf("udp page lacks %q", want)
		}
	}
	b.Reset()
	if err := WriteUDPHTML(&b, nil); err != nil || !strings.Contains(b.String(), "no result") {
		t.Errorf("nil result: %v", err)
	}
}

// FuzzDecode feeds arbitrary bytes to the saved-result reader and renders
// whatever it accepts: no input may panic, and an accepted one renders as
// text, HTML, a comparison with itself and CSV.
func FuzzDecode(f *testing.F) {
	// A small test result: the fixture's time series make a 300 KB
	// input that the fuzzer mutates too slowly to explore.
	small := fullResult()
	for _, d := range []*model.DirectionResult{small.Download, small.Upload} {
		d.Throughput, d.Flows, d.Latency.Samples = d.Throughput[:2], d.Flows[:1], d.Latency.Samples[:2]
		d.Flows[0].Throughput, d.Flows[0].TCPInfo = d.Flows[0].Throughput[:2], d.Flows[0].TCPInfo[:2]
	}
	small.Baseline.Samples = small.Baseline.Samples[:2]
	f.Add(encode(f, small))
	f.Add(encode(f, udpFixture(1)))
	f.Add(encode(f, analysisFixture(2)))
	f.Add(encode(f, monitorFixture(0.9)))
	f.Add([]byte(`{"schema":"sonde.monitor/v1","stats":[{"stream":9,"reliability":[{}],"by_load":[{"reliability":[]}]}],"daily":[{"stream":-3}],"events":[{"stream":-1}]}`))
	f.Add([]byte(`{"schema":"sonde.result/v1","download":{"direction":"download","goodput_bps":1e308,"flows":[{}]}}`))
	f.Add([]byte(`{"schema":"sonde.udp/v1","flows":[{"rtt_histogram":[{"lo":1,"hi":0,"count":-5}]}]}`))
	f.Add([]byte(`{"schema":"sonde.analyze/v1","tcp":[{"http":{"exchanges":[{}]}}],"quic":[{}]}`))
	f.Add([]byte(`{"schema":7}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Decode("fuzz.json", b)
		if err != nil {
			var ie *InputError
			if !errors.As(err, &ie) {
				t.Fatalf("error not an InputError: %v", err)
			}
			return
		}
		var out bytes.Buffer
		if err := s.WriteText(&out); err != nil {
			t.Fatal(err)
		}
		if err := s.WriteHTML(&out); err != nil {
			t.Fatal(err)
		}
		if err := WriteCompareText(&out, []*Saved{s, s}); err != nil {
			t.Fatal(err)
		}
		if err := WriteCompareCSV(&out, []*Saved{s}); err != nil {
			t.Fatal(err)
		}
	})
}
