package model

import "time"

// MBMSchemaVersion names the JSON schema of MBMResult (docs/mbm.md).
const MBMSchemaVersion = "sonde.mbm/v1"

// MBMComposeSchemaVersion names the JSON schema of MBMComposition.
const MBMComposeSchemaVersion = "sonde.mbm-compose/v1"

// MBMResult is one Model Based Metrics run (RFC 8337) over a path or a
// subpath, or a plan (`sonde mbm --plan`: Plan true, no tests). It
// records every parameter the verdicts depend on, so that the run can be
// repeated (RFC 8337's FS-TIDS idea).
type MBMResult struct {
	Schema string    `json:"schema"`
	ID     string    `json:"id,omitempty"`
	Start  time.Time `json:"start,omitzero"`
	End    time.Time `json:"end,omitzero"`
	// Plan is true for `sonde mbm --plan`: the model only, nothing sent.
	Plan bool `json:"plan,omitempty"`
	// Subpath names the part of a path measured, for composition (e.g.
	// "access", "a-b"); empty for an end-to-end run.
	Subpath string       `json:"subpath,omitempty"`
	Target  MBMTarget    `json:"target"`
	Model   MBMModel     `json:"model"`
	SPRT    MBMSPRT      `json:"sprt"`
	Tests   []MBMTest    `json:"tests,omitempty"`
	Env     *MBMEnv      `json:"environment,omitempty"`
	Truth   *GroundTruth `json:"ground_truth,omitempty"`
	Errors  []string     `json:"errors,omitempty"`
	Notes   []string     `json:"notes,omitempty"`
}

// MBMTarget is what the path must support (RFC 8337 §5).
type MBMTarget struct {
	RateBps float64 `json:"rate_bps"`
	RTTMs   float64 `json:"rtt_ms"`
	// MTUBytes is the target MTU; HeaderOverheadBytes the bytes of each
	// packet that are not payload (52: IPv4 + TCP + timestamps).
	MTUBytes            int `json:"mtu_bytes"`
	HeaderOverheadBytes int `json:"header_overhead_bytes"`
}

// MBMModel is the target model derived from MBMTarget.
type MBMModel struct {
	// WindowPackets is W = ceil(rate × RTT / (8 × (MTU − overhead))).
	WindowPackets int64 `json:"window_packets"`
	// RunLengthModel names the model that set p0 ("reference": 3W²).
	RunLengthModel   string  `json:"run_length_model"`
	RunLengthPackets float64 `json:"run_length_packets"`
	// P0 is 1/R (or LossBudget, for a subpath), P1 = 4·P0.
	P0 float64 `json:"p0"`
	P1 float64 `json:"p1"`
	// LossBudget is this subpath's share b of the path's p0 (0: the
	// whole path); PathP0 is the path's 1/R it was cut from.
	LossBudget float64 `json:"loss_budget,omitempty"`
	PathP0     float64 `json:"path_p0"`
	// Models are every run-length model's R and its ratio to 3W².
	Models []MBMRunLength `json:"models"`
}

// MBMRunLength is one run-length model's figure.
type MBMRunLength struct {
	Model      string  `json:"model"`
	Packets    float64 `json:"packets"`
	RatioTo3W2 float64 `json:"ratio_to_3w2"`
	About      string  `json:"about,omitempty"`
}

// MBMSPRT is the sequential test's setting: its error probabilities, its
// lines (PASS if m ≤ −h1 + s·n, FAIL if m ≥ h2 + s·n), its sample floor
// and truncation, and what a decision is expected to cost.
type MBMSPRT struct {
	Alpha float64 `json:"alpha"`
	Beta  float64 `json:"beta"`
	K     float64 `json:"k"`
	S     float64 `json:"s"`
	H1    float64 `json:"h1"`
	H2    float64 `json:"h2"`
	// FloorPackets: no FAIL before this many packets (0: none).
	FloorPackets int64 `json:"floor_packets"`
	// TruncFactor × the largest Wald average sample number gives
	// MaxPackets, where an undecided test is INCONCLUSIVE.
	TruncFactor float64 `json:"trunc_factor"`
	MaxPackets  int64   `json:"max_packets"`
	// Wald's average packets to a decision at p0, p1 and p = s (the
	// worst), and the cheapest PASS (no mark) and FAIL (all marked).
	ASNAtP0      float64 `json:"asn_at_p0"`
	ASNAtP1      float64 `json:"asn_at_p1"`
	MaxASN       float64 `json:"max_asn"`
	CheapestPass int64   `json:"cheapest_pass_packets"`
	CheapestFail int64   `json:"cheapest_fail_packets"`
}

// MBMVerdict is an MBM test's outcome: one of the four constants below,
// written as the string itself in every saved result.
type MBMVerdict string

// The verdicts. PASS and FAIL are decisions about the path; INCONCLUSIVE
// is a test that did not decide (the truncation point, a pattern not
// produced); ERROR is a test that could not run to its end.
const (
	MBMPass         MBMVerdict = "PASS"
	MBMFail         MBMVerdict = "FAIL"
	MBMInconclusive MBMVerdict = "INCONCLUSIVE"
	MBMError        MBMVerdict = "ERROR"
)

// MBMVerdicts are the verdicts, in the order reports list them.
var MBMVerdicts = []MBMVerdict{MBMPass, MBMFail, MBMInconclusive, MBMError}

// Valid reports whether v is one of the four verdicts.
func (v MBMVerdict) Valid() bool {
	switch v {
	case MBMPass, MBMFail, MBMInconclusive, MBMError:
		return true
	}
	return false
}

// MBMTest is one RFC 8337 §8 test's outcome.
type MBMTest struct {
	// ID is the RFC 8337 section ("8.1.1"); Name says it in words.
	ID        string `json:"id"`
	Name      string `json:"name"`
	Transport string `json:"transport"` // "tcp" or "udp"
	// Verdict is PASS, FAIL, INCONCLUSIVE or ERROR; Reason says why.
	Verdict MBMVerdict `json:"verdict"`
	Reason  string     `json:"reason,omitempty"`
	// Packets is n and Marks m (Losses + CE) when the SPRT stopped.
	Packets int64 `json:"packets"`
	Marks   int64 `json:"marks"`
	Losses  int64 `json:"losses"`
	CE      int64 `json:"ce"`
	// Loss is m/n with its Wilson 95 % interval (m/n at a stop is biased).
	Loss     float64 `json:"loss"`
	LossLow  float64 `json:"loss_low"`
	LossHigh float64 `json:"loss_high"`

	// TCP is what a TCP test measured and how (tcprun; mbm_tcp.go).
	TCP *MBMTCP `json:"tcp,omitempty"`
	// UDP is what a UDP test sent and the server saw (udprun; mbm_udp.go).
	UDP *MBMUDP `json:"udp,omitempty"`
}

// MBMEnv is the sending host's setting a verdict depends on.
type MBMEnv struct {
	Kernel            string `json:"kernel,omitempty"`
	CongestionControl string `json:"congestion_control,omitempty"`
	LabProfile        string `json:"lab_profile,omitempty"`
}

// MBMComposition is `sonde mbm compose`: a path's verdict per test from
// its subpaths' saved results.
type MBMComposition struct {
	Schema string `json:"schema"`
	// Inputs are the files composed, in order, with their subpath names.
	Inputs []string `json:"inputs"`
	// Path is the end-to-end result given with --path, measured on the
	// same path, whose loss each test records beside the composed one.
	Path   string            `json:"path,omitempty"`
	Target MBMTarget         `json:"target"`
	PathP0 float64           `json:"path_p0"`
	Tests  []MBMComposedTest `json:"tests"`
	Notes  []string          `json:"notes,omitempty"`
}

// MBMComposedTest is one test composed over the subpaths.
type MBMComposedTest struct {
	ID      string     `json:"id"`
	Verdict MBMVerdict `json:"verdict"`
	Reason  string     `json:"reason"`
	// Loss = 1 − Π(1 − m_i/n_i); LossLow, LossHigh compose the subpaths'
	// Wilson bounds the same way (bounds, not a 95 % interval).
	Loss     float64 `json:"loss"`
	LossLow  float64 `json:"loss_low"`
	LossHigh float64 `json:"loss_high"`
	// Budgets are the subpaths' b_i; BudgetsFit is Π(1 − b_i) ≥ 1 − p0.
	Budgets    []float64 `json:"budgets"`
	BudgetsFit bool      `json:"budgets_fit"`
	// SubpathPackets are the subpaths' n, in the order of Inputs.
	SubpathPackets []int64 `json:"subpath_packets,omitempty"`
	// Measured is the same test measured end to end (compose --path);
	// nil without --path or when that result lacks the test.
	Measured *MBMMeasured `json:"measured,omitempty"`
}

// MBMMeasured is a test's outcome measured end to end, for comparison
// with the composed one.
type MBMMeasured struct {
	Verdict  MBMVerdict `json:"verdict"`
	Packets  int64      `json:"packets"`
	Marks    int64      `json:"marks"`
	Loss     float64    `json:"loss"`
	LossLow  float64    `json:"loss_low"`
	LossHigh float64    `json:"loss_high"`
}
