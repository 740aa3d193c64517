package fleet

import (
	"fmt"
	"slices"
	"sort"
)

// outage is one stored link or target outage of monitor mon.
type outage struct {
	mon        int
	start, end int64
	target     string // "" for a link outage
}

// groupKey is one label value's group of monitors.
type groupKey struct{ label, value string }

// upstreamSpan is a time span during which the rule held, with the
// monitors whose outages overlap it.
type upstreamSpan struct {
	start, end int64
	members    []int
	targets    []string
	rule       string
}

// findUpstream finds the spans during which at least minMon monitors were
// down at once, or at least share of a label group of two or more
// monitors (and at least two of them), and lists the monitors whose
// outages overlap each span. Spans that touch are one. It is a sweep over
// the outages' ends: O(n log n) in the outages, plus the groups of each
// monitor at each change. groups[m] lists monitor m's groups.
func findUpstream(outs []outage, groups [][]groupKey, minMon int, share float64) []upstreamSpan {
	type point struct {
		t    int64
		d    int // +1 start, −1 end
		mon  int
		oidx int
	}
	pts := make([]point, 0, 2*len(outs))
	for i, o := range outs {
		if o.end <= o.start {
			continue
		}
		pts = append(pts, point{o.start, 1, o.mon, i}, point{o.end, -1, o.mon, i})
	}
	sort.Slice(pts, func(i, j int) bool {
		if pts[i].t != pts[j].t {
			return pts[i].t < pts[j].t
		}
		return pts[i].d < pts[j].d // ends first: touching outages do not overlap
	})
	size := map[groupKey]int{}
	for _, gs := range groups {
		for _, g := range gs {
			size[g]++
		}
	}
	downCount := map[int]int{}
	groupDown := map[groupKey]int{}
	distinct, satisfied := 0, 0
	need := func(g groupKey) int { return max(2, int(ceilFrac(share, size[g]))) }
	ruleNow := func() string {
		if distinct >= minMon {
			return fmt.Sprintf("≥ %d monitors", minMon)
		}
		if satisfied > 0 {
			var best groupKey
			found := false
			for g, n := range groupDown {
				if size[g] >= 2 && n >= need(g) && (!found || g.label < best.label || (g.label == best.label && g.value < best.value)) {
					best, found = g, true
				}
			}
			if found {
				return fmt.Sprintf("≥ %.0f %% of %s=%s (%d of %d)", 100*share, best.label, best.value, groupDown[best], size[best])
			}
		}
		return ""
	}
	var spans []upstreamSpan
	open := false
	for i := 0; i < len(pts); {
		t := pts[i].t
		for ; i < len(pts) && pts[i].t == t; i++ {
			p := pts[i]
			before := downCount[p.mon]
			downCount[p.mon] += p.d
			after := downCount[p.mon]
			if (before == 0) == (after == 0) {
				continue
			}
			if after > 0 {
				distinct++
			} else {
				distinct--
			}
			for _, g := range groups[p.mon] {
				if size[g] < 2 {
					continue
				}
				was := groupDown[g] >= need(g)
				if after > 0 {
					groupDown[g]++
				} else {
					groupDown[g]--
				}
				is := groupDown[g] >= need(g)
				switch {
				case is && !was:
					satisfied++
				case was && !is:
					satisfied--
				}
			}
		}
		rule := ruleNow()
		switch {
		case rule != "" && !open:
			if n := len(spans); n > 0 && spans[n-1].end == t {
				open = true // touching: continue the span
			} else {
				spans = append(spans, upstreamSpan{start: t, rule: rule})
				open = true
			}
		case rule == "" && open:
			spans[len(spans)-1].end = t
			open = false
		}
	}
	for k := range spans {
		sp := &spans[k]
		seen := map[int]bool{}
		tset := map[string]bool{}
		link := false
		for _, o := range outs {
			if o.start < sp.end && sp.start < o.end {
				if !seen[o.mon] {
					seen[o.mon] = true
					sp.members = append(sp.members, o.mon)
				}
				if o.target == "" {
					link = true
				} else {
					tset[o.target] = true
				}
			}
		}
		slices.Sort(sp.members)
		if !link {
			for t := range tset {
				sp.targets = append(sp.targets, t)
			}
			slices.Sort(sp.targets)
		}
	}
	return spans
}

// ceilFrac is ⌈share × n⌉, exact for shares with few decimals.
func ceilFrac(share float64, n int) float64 {
	v := share * float64(n)
	r := float64(int64(v))
	if v-r > 1e-9 {
		r++
	}
	return r
}
