// Package grade reads a result on the scales users know from other speed
// tests (spec/grades.md): the DSLReports bufferbloat letter, the
// responsiveness draft's RPM bands with Apple's labels beside them, and
// Cloudflare's AIM use-case verdicts. Each grade carries its inputs and
// thresholds. Of is called once, when a result is finished
// (assemble.Finish), so the CLI, the page and `sonde report` show the same
// letters.
package grade

import (
	"fmt"
	"math"
	"strings"

	"github.com/sonde-project/sonde/internal/model"
)

// BufferbloatScale names the letter scale (DSLReports FAQ 17930; Waveform
// and LibreQoS use the same bands), in ms of added latency.
const BufferbloatScale = "dslreports"

// Bufferbloat bands: A+ < 5 ms, A < 30, B < 60, C < 200, D < 400, F.
var Bufferbloat = []model.Band{{Name: "A+", Below: 5}, {Name: "A", Below: 30}, {Name: "B", Below: 60},
	{Name: "C", Below: 200}, {Name: "D", Below: 400}, {Name: "F"}}

// BufferbloatRank is letter's place on the bufferbloat scale, 0 for A+,
// −1 for a string that is no letter of it: a worse letter ranks higher.
func BufferbloatRank(letter string) int {
	for i, b := range Bufferbloat {
		if b.Name == letter {
			return i
		}
	}
	return -1
}

// BufferbloatLetters are the scale's letters, best first.
func BufferbloatLetters() []string {
	out := make([]string, len(Bufferbloat))
	for i, b := range Bufferbloat {
		out[i] = b.Name
	}
	return out
}

// BufferbloatOf is the letter of an added delay in nanoseconds.
func BufferbloatOf(addedNs int64) string { return Classify(Bufferbloat, float64(addedNs)/1e6) }

// RPMBands are draft-ietf-ippm-responsiveness-09 §1.2's.
var RPMBands = []model.Band{{Name: "Poor", Below: 300}, {Name: "Fair", Below: 1000},
	{Name: "Good", Below: 6000}, {Name: "Excellent"}}

// AppleBands fit networkQuality's observed outputs (undocumented).
var AppleBands = []model.Band{{Name: "Low", Below: 200}, {Name: "Medium", Below: 1000}, {Name: "High"}}

// Classify is the name of the band v falls in: the first whose Below it is
// under, else the last (unbounded) band.
func Classify(bands []model.Band, v float64) string {
	for _, b := range bands[:len(bands)-1] {
		if v < b.Below {
			return b.Name
		}
	}
	return bands[len(bands)-1].Name
}

// aimScale is one metric's points table in Cloudflare's AIM
// (cloudflare/speedtest src/config/internalConfig.ts, d3 scaleThreshold:
// a value equal to a threshold takes the next band's points).
type aimScale struct {
	metric, unit string
	thresholds   []float64
	points       []float64
}

// AIM metrics.
const (
	MetricLatency  = "idle_latency"
	MetricIncrease = "loaded_latency_increase"
	MetricJitter   = "jitter"
	MetricLoss     = "packet_loss"
	MetricDownload = "download"
)

var aimScales = map[string]aimScale{
	MetricLatency:  {MetricLatency, "ms", []float64{10, 20, 50, 100, 500}, []float64{20, 10, 5, 0, -10, -20}},
	MetricIncrease: {MetricIncrease, "ms", []float64{10, 20, 50, 100, 500}, []float64{20, 10, 5, 0, -10, -20}},
	MetricJitter:   {MetricJitter, "ms", []float64{10, 20, 100, 500}, []float64{10, 5, 0, -10, -20}},
	MetricLoss:     {MetricLoss, "ratio", []float64{0.01, 0.05, 0.25, 0.5}, []float64{10, 5, 0, -10, -20}},
	MetricDownload: {MetricDownload, "bit/s", []float64{1e6, 10e6, 50e6, 100e6}, []float64{0, 5, 10, 20, 30}},
}

func (s aimScale) score(v float64) float64 {
	for i, t := range s.thresholds {
		if v < t {
			return s.points[i]
		}
	}
	return s.points[len(s.points)-1]
}

// UseCaseClasses are AIM's classes, worst first.
var UseCaseClasses = []string{"bad", "poor", "average", "good", "great"}

type useCase struct {
	name    string
	inputs  []string
	cutoffs []float64
}

// useCases are AIM's experiences (aimExperiencesDefs; "rtc" is named
// video calls here).
var useCases = []useCase{
	{"streaming", []string{MetricLatency, MetricLoss, MetricDownload, MetricIncrease}, []float64{15, 20, 40, 60}},
	{"gaming", []string{MetricLatency, MetricLoss, MetricIncrease}, []float64{5, 15, 25, 30}},
	{"video_calls", []string{MetricLatency, MetricJitter, MetricLoss, MetricIncrease}, []float64{5, 15, 25, 40}},
}

// ClassUseCase is the class of a use case's summed points (clamped at 0);
// a sum equal to a cut-off takes the better class.
func ClassUseCase(cutoffs []float64, points float64) string {
	points = max(points, 0)
	for i, c := range cutoffs {
		if points < c {
			return UseCaseClasses[i]
		}
	}
	return UseCaseClasses[len(UseCaseClasses)-1]
}

// Inputs are the figures the AIM verdicts read, NaN where not measured,
// and what measured the loss.
type Inputs struct {
	IdleMs, IncreaseMs, JitterMs, Loss, DownloadBps float64
	LossSource                                      string
}

// UseCases scores every use case whose required inputs were measured (a
// missing loss earns 0 points, as in Cloudflare's code).
func UseCases(in Inputs) []model.UseCaseGrade {
	vals := map[string]float64{MetricLatency: in.IdleMs, MetricIncrease: in.IncreaseMs,
		MetricJitter: in.JitterMs, MetricLoss: in.Loss, MetricDownload: in.DownloadBps}
	var out []model.UseCaseGrade
next:
	for _, uc := range useCases {
		g := model.UseCaseGrade{Name: uc.name, Cutoffs: uc.cutoffs, Classes: UseCaseClasses}
		for _, m := range uc.inputs {
			s, v := aimScales[m], vals[m]
			ui := model.UseCaseInput{Metric: m, Unit: s.unit, Thresholds: s.thresholds, PointsTable: s.points}
			if m == MetricLoss {
				ui.Source = in.LossSource
			}
			if finite(v) {
				ui.Value, ui.Measured, ui.Points = v, true, s.score(v)
			} else if m != MetricLoss {
				continue next
			}
			g.Points += ui.Points
			g.Inputs = append(g.Inputs, ui)
		}
		g.Points = max(g.Points, 0)
		g.Class = ClassUseCase(uc.cutoffs, g.Points)
		out = append(out, g)
	}
	return out
}

// Of grades a finished result; nil when it holds nothing to grade.
func Of(r *model.Result) *model.Grades {
	g := &model.Grades{Bufferbloat: bufferbloat(r)}
	for _, d := range []*model.DirectionResult{r.Download, r.Upload} {
		if d != nil && d.RPM != nil && d.RPM.RPM > 0 && finite(d.RPM.RPM) {
			g.Responsiveness = append(g.Responsiveness, model.RPMGrade{Direction: d.Direction, RPM: d.RPM.RPM,
				Band: Classify(RPMBands, d.RPM.RPM), Thresholds: RPMBands,
				Apple: Classify(AppleBands, d.RPM.RPM), AppleThresholds: AppleBands})
		}
	}
	in := aimInputs(r)
	g.UseCases = UseCases(in)
	if len(g.UseCases) > 0 && !finite(in.Loss) {
		g.Notes = append(g.Notes, "use cases: packet loss was not measured (no UDP or WebRTC probes); it adds 0 points")
	}
	g.Limit = Limit(r, g.Bufferbloat)
	if g.Bufferbloat == nil && g.Responsiveness == nil && g.UseCases == nil && g.Limit == "" {
		return nil
	}
	return g
}

// bufferbloat letters each direction's mean RTT rise over the idle mean,
// and overall their average (spec/grades.md).
func bufferbloat(r *model.Result) *model.BufferbloatGrade {
	if r.Baseline == nil || r.Baseline.RTTMs.N == 0 || !finite(r.Baseline.RTTMs.Mean) {
		return nil
	}
	idle := r.Baseline.RTTMs.Mean
	b := &model.BufferbloatGrade{Scale: BufferbloatScale, IdleMs: idle, Thresholds: Bufferbloat}
	var sumAdded, sumLoaded float64
	n := 0
	for _, d := range []*model.DirectionResult{r.Download, r.Upload} {
		if d == nil || d.Latency == nil || d.Latency.RTTMs.N == 0 || !finite(d.Latency.RTTMs.Mean) {
			continue
		}
		l := &model.LetterGrade{LoadedMs: d.Latency.RTTMs.Mean, AddedMs: d.Latency.RTTMs.Mean - idle}
		l.Grade = Classify(Bufferbloat, l.AddedMs)
		if d == r.Download {
			b.Download = l
		} else {
			b.Upload = l
		}
		sumAdded += l.AddedMs
		sumLoaded += l.LoadedMs
		n++
	}
	// The bidirectional phase has a letter of its own, outside the
	// overall one: DSLReports' average is of the two one-way phases.
	if bd := r.Bidir; bd != nil && bd.Latency != nil && bd.Latency.RTTMs.N > 0 && finite(bd.Latency.RTTMs.Mean) {
		l := &model.LetterGrade{LoadedMs: bd.Latency.RTTMs.Mean, AddedMs: bd.Latency.RTTMs.Mean - idle}
		l.Grade = Classify(Bufferbloat, l.AddedMs)
		b.Bidir = l
	}
	if n == 0 {
		if b.Bidir == nil {
			return nil
		}
		return b
	}
	o := &model.LetterGrade{AddedMs: sumAdded / float64(n), LoadedMs: sumLoaded / float64(n)}
	o.Grade = Classify(Bufferbloat, o.AddedMs)
	b.Overall = o
	return b
}

// aimInputs are Cloudflare's inputs: the idle median, jitter as the mean
// change between consecutive idle RTTs, the worst phase's loaded median
// minus the idle median, the loss of the idle UDP probes both ways (else
// of the WebRTC test's datagrams), and the download goodput.
func aimInputs(r *model.Result) Inputs {
	nan := math.NaN()
	in := Inputs{IdleMs: nan, IncreaseMs: nan, JitterMs: nan, Loss: nan, DownloadBps: nan}
	if r.Baseline != nil && r.Baseline.RTTMs.N > 0 {
		in.IdleMs = r.Baseline.RTTMs.P50
		if s := r.Baseline.Samples; len(s) > 1 {
			var sum float64
			for i := 1; i < len(s); i++ {
				sum += math.Abs(s[i].RTTMs - s[i-1].RTTMs)
			}
			in.JitterMs = sum / float64(len(s)-1)
		}
		loaded := []*model.RTTResult{}
		for _, d := range []*model.DirectionResult{r.Download, r.Upload} {
			if d != nil {
				loaded = append(loaded, d.Latency)
			}
		}
		if len(loaded) == 0 && r.Bidir != nil {
			// Only the bidirectional phase ran: its load is the one
			// there is (AIM itself loads one way at a time).
			loaded = append(loaded, r.Bidir.Latency)
		}
		for _, l := range loaded {
			if l != nil && l.RTTMs.N > 0 {
				inc := l.RTTMs.P50 - in.IdleMs
				if !finite(in.IncreaseMs) || inc > in.IncreaseMs {
					in.IncreaseMs = inc
				}
			}
		}
	}
	if u := r.BaselineUDP; u != nil && u.Forward.Sent > 0 {
		// The directions' losses are counted after the loss timeout, so a
		// probe still in flight when the run stopped is not one.
		in.Loss = float64(u.Forward.Lost+u.Backward.Lost) / float64(u.Forward.Sent)
		in.LossSource = "idle UDP probes, both directions"
	} else if w := r.WebRTC; w != nil {
		// The datagrams the ICE transports counted are the path's loss; a
		// message loss above it is the sending stack's own (docs/browser.md).
		sent, lost, what := 0, 0, "WebRTC datagrams, both directions"
		for _, d := range []*model.WebRTCDirection{w.Download, w.Upload} {
			switch {
			case d == nil:
			case d.Datagrams != nil:
				sent, lost = sent+d.Datagrams.Sent, lost+max(d.Datagrams.Sent-d.Datagrams.Received, 0)
			default:
				sent, lost, what = sent+d.Sent, lost+d.Lost, "WebRTC messages, both directions"
			}
		}
		if sent > 0 {
			in.Loss, in.LossSource = float64(lost)/float64(sent), what
		}
	}
	if r.Download != nil && r.Download.GoodputBps > 0 {
		in.DownloadBps = r.Download.GoodputBps
	} else if r.Bidir != nil && r.Bidir.Download != nil && r.Bidir.Download.GoodputBps > 0 {
		in.DownloadBps = r.Bidir.Download.GoodputBps
	}
	return in
}

// Limit says what limits the connection: the download's bottleneck as the
// senders' TCP_INFO attributes it, and the worst direction's queue when
// its letter is worse than B (bufferbloat.net's line).
func Limit(r *model.Result, b *model.BufferbloatGrade) string {
	var parts []string
	if d := r.Download; d != nil && d.RFC6349 != nil {
		switch v := d.RFC6349.Bottleneck; {
		case strings.HasPrefix(v, "network"):
			parts = append(parts, "the download is limited by the network path, not by either end's window")
		case strings.HasPrefix(v, "receiver window"):
			parts = append(parts, "the download is limited by this device's receive window, not by the network: the path may be faster than measured")
		case strings.HasPrefix(v, "sender buffer"):
			parts = append(parts, "the download is limited by the server's send buffer, not by the network: the path may be faster than measured")
		}
	}
	if b != nil {
		worst, dir := (*model.LetterGrade)(nil), ""
		for _, x := range []struct {
			l *model.LetterGrade
			d string
		}{{b.Download, "download"}, {b.Upload, "upload"}, {b.Bidir, "bidirectional"}} {
			if x.l != nil && (worst == nil || x.l.AddedMs > worst.AddedMs) {
				worst, dir = x.l, x.d
			}
		}
		if worst != nil && worst.AddedMs >= 60 {
			parts = append(parts, fmt.Sprintf("under %s load a queue adds %.0f ms (bufferbloat grade %s)", dir, worst.AddedMs, worst.Grade))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	s := strings.Join(parts, "; ")
	return strings.ToUpper(s[:1]) + s[1:] + "."
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
