package query

import (
	"math"
	"slices"
	"time"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/reliability"
	"github.com/sonde-project/sonde/internal/units"
)

// side builds what the analysis does not: seed 001's table per day, the
// time series and the distributions the HTML draws. It reads the same
// per-minute rollups the analysis does (those stored, and those a Roller
// makes of raw samples), one open bucket and one open day per stream at a
// time, so its memory is bounded by the streams and the output, not by
// the probes.
type side struct {
	th       []int64
	fromNs   int64
	bucketNs int64
	roller   *reliability.Roller
	st       []*sideStream
	sent     uint64
	detail   bool // the dashboard's smoke, within and load counts per bucket

	daily       []model.DailyStats
	series      []model.MonitorSeries
	dailyApprox bool // a day's R(L) at a threshold its rollups did not count
}

type sideStream struct {
	bucket  acc
	day     acc
	all     []uint64                        // RTT bins over the range
	load    [len(model.LoadStates)][]uint64 // RTT bins per load state (raw samples only)
	loadN   [len(model.LoadStates)]uint64
	allN    uint64
	series  []model.SeriesPoint
	started bool
}

// acc sums minutes into a bucket or a day.
type acc struct {
	start            int64
	open             bool
	sent, lost, late uint64
	answered         uint64
	sum, sumSq       float64
	minNs, maxNs     int64
	bins             []uint64
	within           []uint64
	withinApprox     bool
	load             [len(model.LoadStates)]uint64 // sent per load state (LoadStates' order)
}

// newSide sums whole minutes into at most points buckets per stream
// (points in [1, MaxSeriesPoints]); detail adds the dashboard's figures.
func newSide(streams int, th []int64, fromNs, toNs int64, points int64, detail bool) *side {
	minutes := (toNs - floorMinute(fromNs) + minuteNs - 1) / minuteNs
	k := max((minutes+points-1)/points, 1)
	s := &side{th: th, fromNs: floorMinute(fromNs), bucketNs: k * minuteNs, st: make([]*sideStream, streams), detail: detail}
	s.roller = reliability.NewRoller(th, s.addMinute)
	return s
}

func (s *side) stream(i int32) *sideStream {
	ss := s.st[i]
	if ss == nil {
		ss = &sideStream{all: make([]uint64, reliability.NumBins)}
		ss.bucket.bins = make([]uint64, reliability.NumBins)
		if s.detail {
			ss.bucket.within = make([]uint64, len(s.th))
		}
		ss.day.bins = make([]uint64, reliability.NumBins)
		ss.day.within = make([]uint64, len(s.th))
		s.st[i] = ss
	}
	return ss
}

// addSample adds a raw sample (already checked by the analysis).
func (s *side) addSample(p model.ProbeSample) error {
	if err := s.roller.Add(p); err != nil {
		return err
	}
	if p.Lost || p.Late || p.RTTNs < 0 {
		return nil
	}
	ss := s.stream(p.Stream)
	li := int(p.Load)
	if li >= len(ss.load) {
		li = int(model.LoadUnknown)
	}
	if ss.load[li] == nil {
		ss.load[li] = make([]uint64, reliability.NumBins)
	}
	ss.load[li][reliability.BinOf(p.RTTNs)]++
	ss.loadN[li]++
	return nil
}

// addMinute adds one minute (stored or rolled up from raw samples). The
// analysis has checked it; minutes of a stream come in order.
func (s *side) addMinute(m model.MonitorRollup) {
	ss := s.stream(m.Stream)
	s.sent += uint64(m.Sent)
	b := s.fromNs + (m.MinuteNs-s.fromNs)/s.bucketNs*s.bucketNs
	if ss.bucket.open && ss.bucket.start != b {
		s.closeBucket(m.Stream, ss)
	}
	d := floorDay(m.MinuteNs)
	if ss.day.open && ss.day.start != d {
		s.closeDay(m.Stream, ss)
	}
	var bth []int64
	if s.detail {
		bth = s.th
	}
	ss.bucket.add(m, b, bth)
	ss.day.add(m, d, s.th)
	for _, bin := range m.Bins {
		ss.all[bin.Bin] += uint64(bin.N)
		ss.allN += uint64(bin.N)
	}
}

func (a *acc) add(m model.MonitorRollup, start int64, th []int64) {
	if !a.open {
		a.open, a.start = true, start
	}
	answered := uint64(m.Sent - m.Lost)
	if answered > 0 {
		if a.answered == 0 || m.MinNs < a.minNs {
			a.minNs = m.MinNs
		}
		if a.answered == 0 || m.MaxNs > a.maxNs {
			a.maxNs = m.MaxNs
		}
	}
	a.sent += uint64(m.Sent)
	a.lost += uint64(m.Lost)
	a.late += uint64(m.Late)
	a.answered += answered
	a.sum += m.SumNs
	a.sumSq += m.SumSqNs
	for _, bin := range m.Bins {
		a.bins[bin.Bin] += uint64(bin.N)
	}
	for _, l := range m.ByLoad {
		a.load[loadIndex(l.Load)] += uint64(l.Sent)
	}
	for i, l := range th {
		switch j := slices.Index(m.ThresholdsNs, l); {
		case j >= 0:
			a.within[i] += uint64(m.Within[j])
		case answered == 0 || l >= m.MaxNs:
			a.within[i] += answered
		default:
			// Bins wholly at or below l: a lower bound, off by at most one bin.
			for _, bin := range m.Bins {
				if reliability.BinUpperNs(int(bin.Bin)) <= l {
					a.within[i] += uint64(bin.N)
				}
			}
			a.withinApprox = true
		}
	}
}

func (a *acc) reset() {
	clear(a.bins)
	clear(a.within)
	bins, within := a.bins, a.within
	*a = acc{bins: bins, within: within}
}

func (s *side) closeBucket(i int32, ss *sideStream) {
	a := &ss.bucket
	pt := model.SeriesPoint{StartNs: a.start, Sent: uint32(min(a.sent, math.MaxUint32)), Lost: uint32(min(a.lost, math.MaxUint32))}
	if a.answered > 0 {
		pt.P50Ns, pt.P99Ns = quantile(a.bins, a.answered, 0.5, a.minNs, a.maxNs), quantile(a.bins, a.answered, 0.99, a.minNs, a.maxNs)
	}
	if s.detail {
		if a.answered > 0 {
			pt.SmokeNs = make([]int64, len(model.SmokeQuantiles))
			for k, q := range model.SmokeQuantiles {
				switch q {
				case 0:
					pt.SmokeNs[k] = a.minNs
				case 1:
					pt.SmokeNs[k] = a.maxNs
				default:
					pt.SmokeNs[k] = quantile(a.bins, a.answered, q, a.minNs, a.maxNs)
				}
			}
		}
		pt.Within = make([]uint32, len(a.within))
		for k, n := range a.within {
			pt.Within[k] = uint32(min(n, math.MaxUint32))
		}
		pt.Load = make([]uint32, len(a.load))
		for k, n := range a.load {
			pt.Load[k] = uint32(min(n, math.MaxUint32))
		}
	}
	ss.series = append(ss.series, pt)
	a.reset()
}

func (s *side) closeDay(i int32, ss *sideStream) {
	a := &ss.day
	d := model.DailyStats{Stream: i, DayNs: a.start, Sent: a.sent, Lost: a.lost, Late: a.late}
	if a.answered > 0 {
		n := float64(a.answered)
		d.MeanNs = a.sum / n
		if a.answered > 1 {
			d.SDNs = math.Sqrt(max(a.sumSq-a.sum*a.sum/n, 0) / (n - 1))
		}
		d.P50Ns = quantile(a.bins, a.answered, 0.5, a.minNs, a.maxNs)
		d.P99Ns = quantile(a.bins, a.answered, 0.99, a.minNs, a.maxNs)
	}
	for k, l := range s.th {
		r := model.Reliability{LNs: l, Sent: a.sent, OK: a.within[k]}
		if a.sent > 0 {
			r.R = float64(r.OK) / float64(a.sent)
		}
		r.Lower, r.Upper = reliability.Bounds(r.OK, a.sent)
		d.Reliability = append(d.Reliability, r)
	}
	s.daily = append(s.daily, d)
	s.dailyApprox = s.dailyApprox || a.withinApprox
	a.reset()
}

// flush closes every open minute, bucket and day.
func (s *side) flush() {
	s.roller.Flush()
	for i, ss := range s.st {
		if ss == nil {
			continue
		}
		if ss.bucket.open {
			s.closeBucket(int32(i), ss)
		}
		if ss.day.open {
			s.closeDay(int32(i), ss)
		}
		if len(ss.series) > 0 {
			s.series = append(s.series, model.MonitorSeries{Stream: int32(i), BucketNs: s.bucketNs, Points: ss.series})
		}
	}
	slices.SortStableFunc(s.daily, func(a, b model.DailyStats) int {
		if a.Stream != b.Stream {
			return int(a.Stream - b.Stream)
		}
		return int((a.DayNs - b.DayNs) / dayNs)
	})
}

// cdfs are the distributions per stream ("all") and per load state.
func (s *side) cdfs() []model.MonitorCDF {
	var out []model.MonitorCDF
	for i, ss := range s.st {
		if ss == nil {
			continue
		}
		if ss.allN > 0 {
			out = append(out, model.MonitorCDF{Stream: int32(i), Load: "all", N: ss.allN, Points: cdfPoints(ss.all, ss.allN)})
		}
		for _, ls := range model.LoadStates {
			if ss.loadN[ls] > 0 {
				out = append(out, model.MonitorCDF{Stream: int32(i), Load: ls.String(), N: ss.loadN[ls], Points: cdfPoints(ss.load[ls], ss.loadN[ls])})
			}
		}
	}
	return out
}

// cdfPoints turns bins into (upper edge, fraction at or below) points,
// skipping steps under 0.2 % but never the last: at most ~500 points.
func cdfPoints(bins []uint64, n uint64) []model.CDFPoint {
	var out []model.CDFPoint
	var cum uint64
	last := -1.0
	for b, c := range bins {
		if c == 0 {
			continue
		}
		cum += c
		f := float64(cum) / float64(n)
		if f-last < 0.002 && cum != n {
			continue
		}
		out = append(out, model.CDFPoint{RTTNs: binEdge(b), Fraction: f})
		last = f
	}
	return out
}

// quantile reads the nearest-rank p-quantile of n values from bins at
// the bin's geometric middle (within 1 %), clamped to the exact extremes.
func quantile(bins []uint64, n uint64, p float64, lo, hi int64) int64 {
	rank := max(uint64(math.Ceil(p*float64(n))), 1)
	var cum uint64
	for b, c := range bins {
		cum += c
		if cum >= rank {
			return min(max(binMid(b), lo), hi)
		}
	}
	return hi
}

func binMid(b int) int64 {
	if b <= 0 {
		return reliability.BinUpperNs(0) / 2
	}
	if b >= reliability.NumBins-1 {
		return reliability.BinUpperNs(reliability.NumBins - 2)
	}
	return int64(math.Sqrt(float64(reliability.BinUpperNs(b-1)) * float64(reliability.BinUpperNs(b))))
}

// binEdge is the value a CDF point stands at: the bin's upper edge (the
// overflow bin's lower one).
func binEdge(b int) int64 {
	if b >= reliability.NumBins-1 {
		return reliability.BinUpperNs(reliability.NumBins - 2)
	}
	return reliability.BinUpperNs(b)
}

// loadIndex is a load state's position in model.LoadStates (unknown for
// a byte beyond them).
func loadIndex(l model.LoadState) int {
	for i, s := range model.LoadStates {
		if s == l {
			return i
		}
	}
	return len(model.LoadStates) - 1
}

func floorDay(t int64) int64 { return units.FloorTo(t, dayNs) }

func isoNs(ns int64) string { return time.Unix(0, ns).UTC().Format(time.RFC3339) }
