package model

// Grades are a result read on the scales users know from other speed tests
// (spec/grades.md), each with the inputs and the thresholds it was read
// from, so a reader can check the letter. internal/grade computes them once,
// when a result is assembled; every renderer shows these, never its own.
type Grades struct {
	// Bufferbloat is the DSLReports letter of the added latency under load.
	Bufferbloat *BufferbloatGrade `json:"bufferbloat,omitempty"`
	// Responsiveness is the RPM band of each load phase that measured RPM.
	Responsiveness []RPMGrade `json:"responsiveness,omitempty"`
	// UseCases are Cloudflare AIM verdicts: streaming, gaming, video calls.
	UseCases []UseCaseGrade `json:"use_cases,omitempty"`
	// Limit says in one plain sentence what limits this connection.
	Limit string   `json:"limit,omitempty"`
	Notes []string `json:"notes,omitempty"`
}

// Band is one step of a scale: values below Below get Name. The last band
// of a scale has no upper bound and no Below.
type Band struct {
	Name  string  `json:"name"`
	Below float64 `json:"below,omitempty"`
}

// LetterGrade is one bufferbloat letter and the added delay it reads.
type LetterGrade struct {
	// AddedMs is the mean RTT under load minus the mean idle RTT.
	AddedMs float64 `json:"added_ms"`
	// LoadedMs is the mean RTT under load (for the overall letter, the
	// mean of the phases').
	LoadedMs float64 `json:"loaded_mean_ms"`
	Grade    string  `json:"grade"`
}

// BufferbloatGrade is the bufferbloat letter per direction and overall;
// Overall averages the directions' added delays.
type BufferbloatGrade struct {
	Scale    string       `json:"scale"`
	IdleMs   float64      `json:"idle_mean_ms"`
	Download *LetterGrade `json:"download,omitempty"`
	Upload   *LetterGrade `json:"upload,omitempty"`
	Overall  *LetterGrade `json:"overall,omitempty"`
	// Bidir letters the bidirectional phase (download and upload at once);
	// it is not part of Overall, which is DSLReports' average of the two
	// one-way phases.
	Bidir      *LetterGrade `json:"bidir,omitempty"`
	Thresholds []Band       `json:"thresholds_ms"`
}

// RPMGrade is one load phase's responsiveness on the draft's bands, with
// the Apple-style label beside it.
type RPMGrade struct {
	Direction       string  `json:"direction"`
	RPM             float64 `json:"rpm"`
	Band            string  `json:"band"`
	Thresholds      []Band  `json:"thresholds"`
	Apple           string  `json:"apple_style"`
	AppleThresholds []Band  `json:"apple_style_thresholds"`
}

// UseCaseInput is one metric of an AIM use case: its value, the points it
// earned and the table they came from (value below Thresholds[i] earns
// PointsTable[i]; at or above the last, the last points).
type UseCaseInput struct {
	Metric string  `json:"metric"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`
	// Measured is false for a packet loss the test did not measure: it
	// then earns 0 points, as in Cloudflare's code.
	Measured bool `json:"measured"`
	// Source says what measured the value, in words.
	Source      string    `json:"source,omitempty"`
	Points      float64   `json:"points"`
	Thresholds  []float64 `json:"thresholds"`
	PointsTable []float64 `json:"points_table"`
}

// UseCaseGrade is one AIM use case: the inputs' points summed (clamped at
// 0) and classed at Cutoffs into Classes.
type UseCaseGrade struct {
	Name    string         `json:"name"`
	Points  float64        `json:"points"`
	Class   string         `json:"class"`
	Cutoffs []float64      `json:"cutoffs"`
	Classes []string       `json:"classes"`
	Inputs  []UseCaseInput `json:"inputs"`
}
