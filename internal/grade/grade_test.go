package grade

import (
	"math"
	"testing"

	"github.com/sonde-project/sonde/internal/model"
)

// Every boundary of every band scale: just below, at, and above.
func TestBands(t *testing.T) {
	cases := []struct {
		scale []model.Band
		v     float64
		want  string
	}{
		{Bufferbloat, -3, "A+"}, {Bufferbloat, 4.999, "A+"}, {Bufferbloat, 5, "A"},
		{Bufferbloat, 29.99, "A"}, {Bufferbloat, 30, "B"}, {Bufferbloat, 59.99, "B"},
		{Bufferbloat, 60, "C"}, {Bufferbloat, 199.9, "C"}, {Bufferbloat, 200, "D"},
		{Bufferbloat, 399.9, "D"}, {Bufferbloat, 400, "F"}, {Bufferbloat, 5000, "F"},
		{RPMBands, 0, "Poor"}, {RPMBands, 299.9, "Poor"}, {RPMBands, 300, "Fair"},
		{RPMBands, 999.9, "Fair"}, {RPMBands, 1000, "Good"}, {RPMBands, 5999, "Good"},
		{RPMBands, 6000, "Excellent"}, {RPMBands, 60000, "Excellent"},
		{AppleBands, 199.9, "Low"}, {AppleBands, 200, "Medium"}, {AppleBands, 999.9, "Medium"},
		{AppleBands, 1000, "High"},
	}
	for _, c := range cases {
		if got := Classify(c.scale, c.v); got != c.want {
			t.Errorf("Classify(%v, %v) = %s, want %s", c.scale[0].Name, c.v, got, c.want)
		}
	}
}

// Every threshold of every AIM points table: below it earns the band's
// points, at it the next band's (d3 scaleThreshold).
func TestAIMPoints(t *testing.T) {
	cases := []struct {
		metric string
		v      float64
		want   float64
	}{
		{MetricLatency, 9.9, 20}, {MetricLatency, 10, 10}, {MetricLatency, 19.9, 10}, {MetricLatency, 20, 5},
		{MetricLatency, 49.9, 5}, {MetricLatency, 50, 0}, {MetricLatency, 99.9, 0}, {MetricLatency, 100, -10},
		{MetricLatency, 499, -10}, {MetricLatency, 500, -20},
		{MetricIncrease, -1, 20}, {MetricIncrease, 10, 10}, {MetricIncrease, 20, 5}, {MetricIncrease, 50, 0},
		{MetricIncrease, 100, -10}, {MetricIncrease, 500, -20},
		{MetricJitter, 9.9, 10}, {MetricJitter, 10, 5}, {MetricJitter, 19.9, 5}, {MetricJitter, 20, 0},
		{MetricJitter, 99.9, 0}, {MetricJitter, 100, -10}, {MetricJitter, 499, -10}, {MetricJitter, 500, -20},
		{MetricLoss, 0, 10}, {MetricLoss, 0.0099, 10}, {MetricLoss, 0.01, 5}, {MetricLoss, 0.0499, 5},
		{MetricLoss, 0.05, 0}, {MetricLoss, 0.2499, 0}, {MetricLoss, 0.25, -10}, {MetricLoss, 0.4999, -10},
		{MetricLoss, 0.5, -20}, {MetricLoss, 1, -20},
		{MetricDownload, 0.99e6, 0}, {MetricDownload, 1e6, 5}, {MetricDownload, 9.9e6, 5},
		{MetricDownload, 10e6, 10}, {MetricDownload, 49e6, 10}, {MetricDownload, 50e6, 20},
		{MetricDownload, 99e6, 20}, {MetricDownload, 100e6, 30}, {MetricDownload, 10e9, 30},
	}
	for _, c := range cases {
		if got := aimScales[c.metric].score(c.v); got != c.want {
			t.Errorf("%s(%v) = %v points, want %v", c.metric, c.v, got, c.want)
		}
	}
}

// Every cut-off of every use case, and the clamp at 0.
func TestUseCaseClasses(t *testing.T) {
	cut := map[string][]float64{}
	for _, uc := range useCases {
		cut[uc.name] = uc.cutoffs
	}
	cases := []struct {
		name   string
		points float64
		want   string
	}{
		{"streaming", -40, "bad"}, {"streaming", 14, "bad"}, {"streaming", 15, "poor"}, {"streaming", 19, "poor"},
		{"streaming", 20, "average"}, {"streaming", 39, "average"}, {"streaming", 40, "good"},
		{"streaming", 59, "good"}, {"streaming", 60, "great"},
		{"gaming", 4, "bad"}, {"gaming", 5, "poor"}, {"gaming", 14, "poor"}, {"gaming", 15, "average"},
		{"gaming", 24, "average"}, {"gaming", 25, "good"}, {"gaming", 29, "good"}, {"gaming", 30, "great"},
		{"video_calls", 4, "bad"}, {"video_calls", 5, "poor"}, {"video_calls", 15, "average"},
		{"video_calls", 24, "average"}, {"video_calls", 25, "good"}, {"video_calls", 39, "good"},
		{"video_calls", 40, "great"},
	}
	for _, c := range cases {
		if got := ClassUseCase(cut[c.name], c.points); got != c.want {
			t.Errorf("%s at %v points = %s, want %s", c.name, c.points, got, c.want)
		}
	}
}

// grades.md's worked example: 15 ms idle, 0 % loss, +30 ms under load,
// 200 Mbit/s → streaming 55 (good), gaming 25 (good).
func TestUseCasesExample(t *testing.T) {
	got := UseCases(Inputs{IdleMs: 15, IncreaseMs: 30, JitterMs: 2, Loss: 0, DownloadBps: 200e6})
	want := map[string]struct {
		p float64
		c string
	}{"streaming": {55, "good"}, "gaming": {25, "good"}, "video_calls": {35, "good"}}
	if len(got) != 3 {
		t.Fatalf("got %d use cases, want 3", len(got))
	}
	for _, g := range got {
		if w := want[g.Name]; g.Points != w.p || g.Class != w.c {
			t.Errorf("%s = %v (%s), want %v (%s)", g.Name, g.Points, g.Class, w.p, w.c)
		}
	}
	// Unmeasured loss earns 0 points, not 10; a missing download drops
	// streaming only.
	got = UseCases(Inputs{IdleMs: 15, IncreaseMs: 30, JitterMs: 2, Loss: math.NaN(), DownloadBps: math.NaN()})
	if len(got) != 2 || got[0].Name != "gaming" || got[0].Points != 15 || got[0].Inputs[1].Measured {
		t.Errorf("without loss and download: %+v", got)
	}
}

func rtt(mean, median float64, n int) *model.RTTResult {
	return &model.RTTResult{RTTMs: model.Stats{N: n, Mean: mean, P50: median}}
}

func TestOf(t *testing.T) {
	r := &model.Result{
		Baseline: rtt(20, 19, 10),
		Download: &model.DirectionResult{Direction: "download", GoodputBps: 90e6, Latency: rtt(40, 38, 50),
			RPM: &model.RPM{RPM: 950}, RFC6349: &model.RFC6349{Bottleneck: "receiver window"}},
		Upload: &model.DirectionResult{Direction: "upload", Latency: rtt(320, 300, 50)},
	}
	g := Of(r)
	b := g.Bufferbloat
	if b.Download.Grade != "A" || b.Upload.Grade != "D" || b.Upload.AddedMs != 300 || b.Overall.AddedMs != 160 || b.Overall.Grade != "C" {
		t.Errorf("bufferbloat %+v %+v %+v", b.Download, b.Upload, b.Overall)
	}
	if len(g.Responsiveness) != 1 || g.Responsiveness[0].Band != "Fair" || g.Responsiveness[0].Apple != "Medium" {
		t.Errorf("responsiveness %+v", g.Responsiveness)
	}
	// Increase = max(19, 281) = 281 ms → −10; idle 19 → 10; download 90M → 20.
	for _, u := range g.UseCases {
		if u.Name == "streaming" && u.Points != 20 {
			t.Errorf("streaming %v points, want 20", u.Points)
		}
	}
	want := "The download is limited by this device's receive window, not by the network: the path may be faster than measured; under upload load a queue adds 300 ms (bufferbloat grade D)."
	if g.Limit != want {
		t.Errorf("limit %q", g.Limit)
	}
	if Of(&model.Result{}) != nil {
		t.Error("an empty result has grades")
	}
}

// Loss comes from the idle UDP probes when there are any, else from the
// WebRTC datagrams (the path's loss, not the sending stack's drops).
func TestLossInput(t *testing.T) {
	r := &model.Result{WebRTC: &model.WebRTCResult{
		Upload:   &model.WebRTCDirection{Sent: 1000, Lost: 50, Datagrams: &model.DatagramCount{Sent: 1000, Received: 990}},
		Download: &model.WebRTCDirection{Sent: 1000, Lost: 0, Datagrams: &model.DatagramCount{Sent: 1000, Received: 1000}},
	}}
	if in := aimInputs(r); in.Loss != 0.005 || in.LossSource != "WebRTC datagrams, both directions" {
		t.Errorf("WebRTC loss %v from %q", in.Loss, in.LossSource)
	}
	r.BaselineUDP = &model.UDPFlow{Sent: 100, Replies: 97, Forward: model.UDPDirectionStats{Sent: 100, Lost: 1}, Backward: model.UDPDirectionStats{Lost: 1}}
	if in := aimInputs(r); in.Loss != 0.02 || in.LossSource != "idle UDP probes, both directions" {
		t.Errorf("UDP loss %v from %q", in.Loss, in.LossSource)
	}
}

// TestBufferbloatOf: the letter of an added delay in ns, on the band
// edges; the rank orders the letters and refuses a non-letter.
func TestBufferbloatOf(t *testing.T) {
	const ms = int64(1e6)
	for ns, g := range map[int64]string{0: "A+", 4 * ms: "A+", 5 * ms: "A", 29 * ms: "A", 30 * ms: "B", 60 * ms: "C", 199 * ms: "C", 200 * ms: "D", 400 * ms: "F"} {
		if BufferbloatOf(ns) != g {
			t.Errorf("BufferbloatOf(%d ms) = %s, want %s", ns/ms, BufferbloatOf(ns), g)
		}
	}
	if BufferbloatRank("A+") != 0 || BufferbloatRank("F") != 5 || BufferbloatRank("E") != -1 || len(BufferbloatLetters()) != 6 {
		t.Errorf("ranks %d %d %d, letters %v", BufferbloatRank("A+"), BufferbloatRank("F"), BufferbloatRank("E"), BufferbloatLetters())
	}
}

// The bidirectional phase gets a letter of its own, outside the overall
// average of the one-way phases; alone, it feeds AIM's loaded increase
// and download.
func TestBidir(t *testing.T) {
	bidir := &model.BidirResult{Latency: rtt(140, 120, 50),
		Download: &model.DirectionResult{Direction: "download", GoodputBps: 60e6}}
	r := &model.Result{Baseline: rtt(20, 19, 10),
		Download: &model.DirectionResult{Direction: "download", GoodputBps: 90e6, Latency: rtt(40, 38, 50)},
		Upload:   &model.DirectionResult{Direction: "upload", Latency: rtt(50, 48, 50)},
		Bidir:    bidir}
	b := Of(r).Bufferbloat
	if b.Bidir == nil || b.Bidir.AddedMs != 120 || b.Bidir.Grade != "C" || b.Overall.AddedMs != 25 || b.Overall.Grade != "A" {
		t.Errorf("bufferbloat %+v overall %+v", b.Bidir, b.Overall)
	}
	if g := Of(r); g.Limit != "Under bidirectional load a queue adds 120 ms (bufferbloat grade C)." {
		t.Errorf("limit %q", g.Limit)
	}
	in := aimInputs(r)
	if in.IncreaseMs != 29 || in.DownloadBps != 90e6 {
		t.Errorf("with one-way phases: increase %v download %v, want theirs (29, 90e6)", in.IncreaseMs, in.DownloadBps)
	}
	only := &model.Result{Baseline: rtt(20, 19, 10), Bidir: bidir}
	g := Of(only)
	if g.Bufferbloat.Bidir == nil || g.Bufferbloat.Overall != nil {
		t.Errorf("bidir only: %+v", g.Bufferbloat)
	}
	in = aimInputs(only)
	if in.IncreaseMs != 101 || in.DownloadBps != 60e6 {
		t.Errorf("bidir only: increase %v download %v, want 101, 60e6", in.IncreaseMs, in.DownloadBps)
	}
}
