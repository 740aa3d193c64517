package metrics

import (
	"slices"

	"github.com/sonde-project/sonde/internal/model"
)

// RFC 3357 one-way loss patterns (metrics.md §4). lost is the per-packet
// loss flag in sequence order: lost[i] is true when packet i was lost.

// LossDistances returns the RFC 3357 §4.1 loss distance of every packet:
// 0 for a received packet and for the first lost packet, otherwise the
// difference in sequence numbers between the lost packet and the previous
// lost packet. Together with lost it is the sample of <loss distance, loss>
// pairs.
func LossDistances(lost []bool) []int {
	out := make([]int, len(lost))
	prev := -1
	for i, l := range lost {
		if !l {
			continue
		}
		if prev >= 0 {
			out[i] = i - prev
		}
		prev = i
	}
	return out
}

// LossPeriods returns the RFC 3357 §4.2 loss period of every packet: 0 for
// a received packet, otherwise the number (from 1) of the loss period it
// belongs to. A period starts at packet i when i is lost and i−1 was
// received (or i is the first packet).
func LossPeriods(lost []bool) []int {
	out := make([]int, len(lost))
	period := 0
	for i, l := range lost {
		if !l {
			continue
		}
		if i == 0 || !lost[i-1] {
			period++
		}
		out[i] = period
	}
	return out
}

// LossPatternOf summarises lost with the RFC 3357 statistics:
//   - loss distance of every loss but the first (which has no predecessor);
//   - the number of loss periods, their lengths (packets in each, with a
//     count per length), and the inter-loss-period lengths: the start of a
//     period minus the last packet of the previous one (so 1 + the packets
//     received in between);
//   - the noticeable loss rate for the loss constraint delta (§6.1): the
//     losses whose distance to the previous loss is at most delta, over all
//     packets of the stream. delta < 1 is taken as 1.
func LossPatternOf(lost []bool, delta int) model.LossPattern {
	delta = max(delta, 1)
	p := model.LossPattern{Packets: len(lost), NoticeableDelta: delta}
	var distances, lengths, inter []float64
	prevLoss, periodStart, prevPeriodEnd := -1, -1, -1
	noticeable := 0
	counts := map[int]int{}
	endPeriod := func(end int) {
		n := end - periodStart + 1
		lengths = append(lengths, float64(n))
		counts[n]++
		prevPeriodEnd = end
	}
	for i, l := range lost {
		if !l {
			if periodStart >= 0 {
				endPeriod(i - 1)
				periodStart = -1
			}
			continue
		}
		p.Lost++
		if prevLoss >= 0 {
			d := i - prevLoss
			distances = append(distances, float64(d))
			if d <= delta {
				noticeable++
			}
		}
		prevLoss = i
		if periodStart < 0 {
			periodStart = i
			p.Periods++
			if prevPeriodEnd >= 0 {
				inter = append(inter, float64(i-prevPeriodEnd))
			}
		}
	}
	if periodStart >= 0 {
		endPeriod(len(lost) - 1)
	}
	p.LossDistance = Summarize(distances)
	p.PeriodLength = Summarize(lengths)
	p.InterPeriodLength = Summarize(inter)
	for _, n := range sortedKeys(counts) {
		p.PeriodLengthCounts = append(p.PeriodLengthCounts, model.CountBin{Value: n, Count: counts[n]})
	}
	if len(lost) > 0 {
		p.NoticeableLossRate = float64(noticeable) / float64(len(lost))
	}
	return p
}

func sortedKeys(m map[int]int) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// ReorderingOf computes RFC 4737 reordering from sequence numbers in arrival
// order. A packet is reordered when its sequence number is below the next
// expected one (one more than the highest seen so far); its extent is the
// number of packets that arrived between the earliest arrival with a larger
// sequence number and itself, inclusive of the former (RFC 4737 §4.2.1).
// Duplicates (a sequence number seen before) are ignored, as the RFC asks;
// the second result counts them.
func ReorderingOf(arrivals []uint64) (model.Reordering, int) {
	var r model.Reordering
	seen := make(map[uint64]struct{}, len(arrivals))
	// prefixMax[k] is the highest sequence number among the first k+1
	// distinct arrivals; it is non-decreasing, so the earliest arrival with a
	// larger number than s is found by binary search.
	prefixMax := make([]uint64, 0, len(arrivals))
	var extents []float64
	dups := 0
	for _, s := range arrivals {
		if _, ok := seen[s]; ok {
			dups++
			continue
		}
		seen[s] = struct{}{}
		i := len(prefixMax)
		if i > 0 && s < prefixMax[i-1]+1 {
			j, _ := slices.BinarySearchFunc(prefixMax, s, func(m, s uint64) int {
				if m > s {
					return 1
				}
				return -1
			})
			e := i - j
			extents = append(extents, float64(e))
			r.MaxExtent = max(r.MaxExtent, e)
			r.Reordered++
		}
		if i == 0 || s > prefixMax[i-1] {
			prefixMax = append(prefixMax, s)
		} else {
			prefixMax = append(prefixMax, prefixMax[i-1])
		}
	}
	r.Received = len(prefixMax)
	if r.Received > 0 {
		r.RatioPct = 100 * float64(r.Reordered) / float64(r.Received)
	}
	r.ExtentPackets = Summarize(extents)
	return r, dups
}
