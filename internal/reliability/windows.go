package reliability

import (
	"slices"

	"github.com/sonde-project/sonde/internal/model"
)

// windows computes R(L) over sliding windows of each configured length,
// advancing by one minute, from the per-minute counts (exact from raw
// samples and from rollups alike), and the profile verdicts over the
// whole range and per window length.
func (a *Analyzer) windows(st *streamAcc, whole []model.Reliability) ([]model.WindowReliability, []model.ProfileVerdict) {
	var out []model.WindowReliability
	var verdicts []model.ProfileVerdict
	for _, p := range a.cfg.Profiles {
		k := slices.Index(a.th, p.LatencyNs)
		f := whole[k]
		v := model.ProfileVerdict{Profile: p.Name, WorstR: f.R}
		v.Verdict = Judge(f, p.Reliability)
		count(&v, v.Verdict)
		verdicts = append(verdicts, v)
	}
	mins := st.minutes
	if len(mins) == 0 {
		return nil, verdicts
	}
	first, last := mins[0].ns, mins[len(mins)-1].ns
	nth := len(a.th)
	for _, w := range a.cfg.WindowsNs {
		wins := make([]model.WindowReliability, nth)
		vals := make([][]float64, nth)
		for k := range wins {
			wins[k] = model.WindowReliability{WindowNs: w, LNs: a.th[k], Worst: model.Reliability{LNs: a.th[k]}}
		}
		pv := make([]model.ProfileVerdict, len(a.cfg.Profiles))
		for j, p := range a.cfg.Profiles {
			pv[j] = model.ProfileVerdict{Profile: p.Name, WindowNs: w, WorstR: 1}
		}
		// Two pointers over the sparse minute records: [lo, hi) are the
		// records inside [start, start+w).
		var sent uint64
		ok := make([]uint64, nth)
		lo, hi := 0, 0
		lastStart := max(first, last-w+MinuteNs)
		for start := first; start <= lastStart; start += MinuteNs {
			for hi < len(mins) && mins[hi].ns < start+w {
				sent += uint64(mins[hi].sent)
				for k := range ok {
					ok[k] += uint64(mins[hi].within[k])
				}
				hi++
			}
			for lo < hi && mins[lo].ns < start {
				sent -= uint64(mins[lo].sent)
				for k := range ok {
					ok[k] -= uint64(mins[lo].within[k])
				}
				lo++
			}
			if sent < a.cfg.MinWindowProbes {
				continue
			}
			for k := range wins {
				r := float64(ok[k]) / float64(sent)
				vals[k] = append(vals[k], r)
				if wins[k].Windows == 0 || r < wins[k].Worst.R {
					wins[k].Worst = Figure(a.th[k], ok[k], sent)
					wins[k].WorstStartNs = start
				}
				wins[k].Windows++
			}
			for j, p := range a.cfg.Profiles {
				k := slices.Index(a.th, p.LatencyNs)
				f := Figure(p.LatencyNs, ok[k], sent)
				count(&pv[j], Judge(f, p.Reliability))
				pv[j].WorstR = min(pv[j].WorstR, f.R)
			}
		}
		for k := range wins {
			if v := vals[k]; len(v) > 0 {
				slices.Sort(v)
				wins[k].P1, wins[k].P5 = nearestRank(v, 0.01), nearestRank(v, 0.05)
				wins[k].P25, wins[k].P50 = nearestRank(v, 0.25), nearestRank(v, 0.5)
				wins[k].Max = v[len(v)-1]
			}
		}
		out = append(out, wins...)
		for j := range pv {
			switch {
			case pv[j].Fail > 0:
				pv[j].Verdict = model.VerdictFail
			case pv[j].Insufficient > 0 || pv[j].Pass == 0:
				pv[j].Verdict = model.VerdictInsufficient
			default:
				pv[j].Verdict = model.VerdictPass
			}
		}
		verdicts = append(verdicts, pv...)
	}
	return out, verdicts
}

// Judge decides a requirement from one figure's confidence interval:
// PASS when even its lower bound meets it, FAIL when even its upper bound
// misses it, else too few samples to tell (INSUFFICIENT). The monitor's
// and the fleet's reports judge by it.
func Judge(f model.Reliability, req float64) string {
	switch {
	case f.Sent > 0 && f.Lower >= req:
		return model.VerdictPass
	case f.Sent > 0 && f.Upper < req:
		return model.VerdictFail
	}
	return model.VerdictInsufficient
}

func count(v *model.ProfileVerdict, verdict string) {
	switch verdict {
	case model.VerdictPass:
		v.Pass++
	case model.VerdictFail:
		v.Fail++
	default:
		v.Insufficient++
	}
}
