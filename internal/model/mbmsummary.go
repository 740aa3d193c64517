package model

// MBMSummarySchemaVersion names the JSON schema of MBMSummary (docs/mbm.md,
// "Summary").
const MBMSummarySchemaVersion = "sonde.mbm-summary/v1"

// MBMSummary is `sonde mbm summary`: many saved MBM results (sonde.mbm/v1)
// and compositions (sonde.mbm-compose/v1) aggregated: the test outcomes
// grouped by setting, the SPRT's packets to decide, and the composed
// against the measured end-to-end loss.
type MBMSummary struct {
	Schema string `json:"schema"`
	// Results and Compositions count the files of each schema read.
	Results      int `json:"results"`
	Compositions int `json:"compositions"`
	// Groups are the tests' outcomes by setting, in a stable order
	// (test, transport, target, subpath, p0, derate, burst).
	Groups []MBMSummaryGroup `json:"groups"`
	// Decide is the histogram of the packets the SPRT took to decide,
	// over every decided test, in power-of-two bins.
	Decide []MBMDecideBin `json:"decide"`
	// Compose is the composed against the measured end-to-end loss of
	// the compositions that recorded one (compose --path); nil if none.
	Compose *MBMComposeSummary `json:"compose,omitempty"`
}

// MBMSummaryGroup is the runs of one test at one setting.
type MBMSummaryGroup struct {
	TestID    string    `json:"test_id"`
	Name      string    `json:"name,omitempty"`
	Transport string    `json:"transport"`
	Target    MBMTarget `json:"target"`
	Subpath   string    `json:"subpath,omitempty"`
	// P0 and P1 are the group's pass and fail loss rates (a subpath's
	// budget as p0).
	P0 float64 `json:"p0"`
	P1 float64 `json:"p1"`
	// Derate (8.5.1) and BurstPackets (8.4, 8.5.1) are the pattern's, 0
	// when the test has none.
	Derate       float64 `json:"derate,omitempty"`
	BurstPackets int64   `json:"burst_packets,omitempty"`
	// Runs counts the results of this group; Verdicts their verdicts.
	Runs     int              `json:"runs"`
	Verdicts MBMVerdictCounts `json:"verdicts"`
	// Loss is m/n at the verdict over the runs that counted packets.
	Loss MBMQuartiles `json:"loss"`
	// DecisionPackets are the packets the SPRT took to a PASS or FAIL
	// (UDP tests' decision_packets; a TCP test records none: its verdict
	// may come from the rate precondition).
	DecisionPackets MBMQuartiles `json:"decision_packets"`
}

// MBMVerdictCounts counts verdicts.
type MBMVerdictCounts struct {
	Pass         int `json:"pass"`
	Fail         int `json:"fail"`
	Inconclusive int `json:"inconclusive"`
	Error        int `json:"error"`
}

// MBMQuartiles are a sample's min, quartiles and max (linear
// interpolation between order statistics); all 0 when N is 0.
type MBMQuartiles struct {
	N      int     `json:"n"`
	Min    float64 `json:"min"`
	Q1     float64 `json:"q1"`
	Median float64 `json:"median"`
	Q3     float64 `json:"q3"`
	Max    float64 `json:"max"`
}

// MBMDecideBin is one bin of the packets-to-decide histogram: tests that
// decided after Low to High packets (High = 2·Low − 1), by verdict.
type MBMDecideBin struct {
	Low  int64 `json:"low"`
	High int64 `json:"high"`
	Pass int   `json:"pass"`
	Fail int   `json:"fail"`
}

// MBMComposeSummary compares composed with measured end-to-end losses.
type MBMComposeSummary struct {
	// Points are every composed test with a measured end-to-end loss.
	Points []MBMComposePoint `json:"points"`
	// QQ pairs the sorted composed losses with the sorted measured ones
	// (a Q-Q plot) over the points whose every run counted more than
	// QQMinPackets packets; QQAll over every point.
	QQMinPackets int64       `json:"qq_min_packets"`
	QQ           []MBMQQPair `json:"qq"`
	QQAll        []MBMQQPair `json:"qq_all"`
	// MaxDeviation is the largest |composed − measured| over QQ (0 if
	// empty), MaxDeviationAll over QQAll.
	MaxDeviation    float64 `json:"max_deviation"`
	MaxDeviationAll float64 `json:"max_deviation_all"`
}

// MBMComposePoint is one composed test beside its measured end-to-end
// loss.
type MBMComposePoint struct {
	TestID   string  `json:"test_id"`
	Composed float64 `json:"composed"`
	Measured float64 `json:"measured"`
	// MinPackets is the fewest packets any of its runs counted (the
	// subpaths' and the end-to-end one).
	MinPackets int64 `json:"min_packets"`
}

// MBMQQPair is one quantile pair of a Q-Q plot.
type MBMQQPair struct {
	Composed float64 `json:"composed"`
	Measured float64 `json:"measured"`
}
