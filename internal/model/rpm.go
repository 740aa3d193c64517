package model

import "time"

// RPMSchemaVersion names the layout of RPMResult (docs/result-schema.md).
const RPMSchemaVersion = "sonde.rpm/v1"

// RPMResult is what `sonde rpm` measured: the responsiveness test of
// draft-ietf-ippm-responsiveness-09 against any server of the draft.
type RPMResult struct {
	Schema   string    `json:"schema"`
	Software string    `json:"software"`
	Start    time.Time `json:"start"`
	// ConfigURL is the configuration fetched; Large, Small and Upload the
	// endpoints it named; Protocol the HTTP version of the load ("HTTP/2.0").
	ConfigURL string `json:"config_url"`
	SmallURL  string `json:"small_url"`
	LargeURL  string `json:"large_url"`
	UploadURL string `json:"upload_url"`
	Protocol  string `json:"protocol"`
	// Parameters of the algorithm (§5.4): the interval ID, the moving
	// average window MAD, the stability threshold SDT and the trim.
	IntervalS    float64 `json:"interval_s"`
	MAD          int     `json:"mad"`
	SDTPct       float64 `json:"sdt_pct"`
	TrimPct      float64 `json:"trim_pct"`
	MaxDurationS float64 `json:"max_duration_s"`
	// Directions in the order run (download, upload: sequential).
	Directions []RPMDirection `json:"directions"`
	// GroundTruth is the lab path the run was measured across (--lab).
	GroundTruth *GroundTruth `json:"ground_truth,omitempty"`
	// Overall is RPM over both directions' probes together.
	Overall *RPMFigure `json:"overall,omitempty"`
	Errors  []string   `json:"errors,omitempty"`
	Notes   []string   `json:"notes,omitempty"`
}

// RPMDirection is one direction's load and responsiveness.
type RPMDirection struct {
	Direction string `json:"direction"` // "download" or "upload"
	// GoodputBps is the moving average of the last MAD intervals at the end.
	GoodputBps float64 `json:"goodput_bps"`
	Bytes      int64   `json:"bytes"`
	Flows      int     `json:"flows"`
	DurationS  float64 `json:"duration_s"`
	// GoodputStable and RPMStable tell whether each converged (§5.4).
	GoodputStable bool `json:"goodput_stable"`
	RPMStable     bool `json:"rpm_stable"`
	// Confidence is Low (fewer than MAD intervals), Medium (not stable)
	// or High (§5.4.1).
	Confidence string     `json:"confidence"`
	RPM        *RPMFigure `json:"rpm,omitempty"`
	// Intervals is the per-interval series.
	Intervals []RPMInterval `json:"intervals"`
}

// RPMFigure is a responsiveness figure with its probe times (ms) and bands.
type RPMFigure struct {
	RPM float64 `json:"rpm"`
	// Band is the draft's (Poor/Fair/Good/Excellent), AppleBand the
	// Apple-style label (Low/Medium/High).
	Band      string `json:"band"`
	AppleBand string `json:"apple_style_band"`
	// Trimmed means (95 % single-sided) of each probe time, ms.
	ForeignTCPMs  float64 `json:"foreign_tcp_ms"`
	ForeignTLSMs  float64 `json:"foreign_tls_ms,omitempty"`
	ForeignHTTPMs float64 `json:"foreign_http_ms"`
	SelfHTTPMs    float64 `json:"self_http_ms"`
	ForeignProbes int     `json:"foreign_probes"`
	SelfProbes    int     `json:"self_probes"`
}

// RPMInterval is one interval ID of a direction.
type RPMInterval struct {
	EndS       float64 `json:"end_s"`
	Flows      int     `json:"flows"`
	GoodputBps float64 `json:"goodput_bps"`
	// MovingBps is the moving average over the last MAD intervals.
	MovingBps float64 `json:"moving_bps"`
	// RPM over the probes of the last MAD intervals (0: too few).
	RPM float64 `json:"rpm"`
}
