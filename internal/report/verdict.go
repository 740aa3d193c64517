package report

import (
	"math"
)

// Verdict levels, used as CSS classes in the HTML report.
const (
	levelOK   = "ok"
	levelWarn = "warn"
	levelBad  = "bad"
)

// delayGrade names a range of queueing delay added under load: the median
// RTT under load minus the idle median. The boundaries are absolute because
// what a user feels is the added wait, whatever the idle RTT:
//   - below 5 ms the queue is within the noise of a quiet path;
//   - 30 ms is about what a well-managed queue (CoDel/PIE targets of 5-15 ms
//     per direction, RFC 8289/8033) adds at worst;
//   - 100 ms added round trip is where calls and games start to degrade
//     (ITU-T G.114 puts the one-way comfort limit at 150 ms);
//   - 400 ms added is the regime of the seed 001 ADSL uplink (≈450 ms), where
//     even page loads stall.
//
// The same cut-offs (5/30/100/400 ms) sit close to the grades used by common
// bufferbloat tests, so a reader can compare.
type delayGrade struct {
	belowMs float64
	words   string
	level   string
}

var delayGrades = []delayGrade{
	{5, "negligible", levelOK},
	{30, "low", levelOK},
	{100, "moderate, noticeable in calls and games", levelWarn},
	{400, "bufferbloat, calls and games suffer while it runs", levelBad},
	{math.Inf(1), "severe bufferbloat, even web pages stall while it runs", levelBad},
}

// queueingVerdict says in plain words what the added delay means for one
// direction ("upload adds 350 ms of queueing delay: bufferbloat, ...").
func queueingVerdict(direction string, addedMs float64) (text, level string) {
	if !finite(addedMs) {
		return "", ""
	}
	if addedMs < 0.05 {
		return direction + " adds no queueing delay", levelOK
	}
	for _, g := range delayGrades {
		if addedMs < g.belowMs {
			return direction + " adds " + FormatMs(addedMs) + " of queueing delay: " + g.words, g.level
		}
	}
	return "", "" // unreachable: the last grade is unbounded
}
