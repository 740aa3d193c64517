package reliability

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"
	"unicode"

	"github.com/sonde-project/sonde/internal/model"
)

const (
	// MaxProfileFile bounds a profile file's size.
	MaxProfileFile = 64 << 10
	maxProfiles    = 64
	maxNameLen     = 64
)

// SmartGrid returns the smart-grid requirement table of seed 001 (Table 2,
// from Hossain et al.). The table gives ranges; each becomes one test at
// the range's upper latency and upper reliability: the upper latency is
// the only usable figure when the lower end is 0 (a "0-5 s" requirement
// cannot mean "within 0 s"), and the upper reliability is the strictest
// member of the class. Latency is compared with RTT, as seed 001 did: a
// one-way requirement met by the round trip is met one way (conservative).
func SmartGrid() []model.RequirementProfile {
	const src = "seed 001 Table 2 (Hossain et al.)"
	return []model.RequirementProfile{
		{Name: "price", LatencyNs: 10 * 60 * sec, Reliability: 0.98, Source: src + ": 1-10 min, 98%"},
		{Name: "metering", LatencyNs: 15 * 60 * sec, Reliability: 0.99, Source: src + ": 0-15 min, 98-99%"},
		{Name: "consumer-information", LatencyNs: 30 * sec, Reliability: 0.99, Source: src + ": 5-30 s, 99%"},
		{Name: "electric-car", LatencyNs: 60 * sec, Reliability: 0.995, Source: src + ": 5-60 s, 98-99.5%"},
		{Name: "dispatch-storage", LatencyNs: 5 * sec, Reliability: 0.995, Source: src + ": 0-5 s, 98-99.5%"},
	}
}

// profileFile is the JSON of a user profile file:
//
//	{"profiles": [{"name": "voip", "latency": "150ms", "reliability": 0.999}]}
type profileFile struct {
	Profiles []struct {
		Name        string   `json:"name"`
		Latency     string   `json:"latency"`
		Reliability *float64 `json:"reliability"`
	} `json:"profiles"`
}

// ParseProfiles reads a user profile file's content strictly: at most
// MaxProfileFile bytes, no unknown fields, no trailing data, 1 to 64
// profiles with unique names; each error is one line naming the profile.
func ParseProfiles(data []byte) ([]model.RequirementProfile, error) {
	if len(data) > MaxProfileFile {
		return nil, fmt.Errorf("profiles: file is %d bytes, over the %d-byte limit", len(data), MaxProfileFile)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f profileFile
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("profiles: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("profiles: trailing data after the JSON object")
	}
	if len(f.Profiles) == 0 || len(f.Profiles) > maxProfiles {
		return nil, fmt.Errorf("profiles: %d profiles: want 1 to %d", len(f.Profiles), maxProfiles)
	}
	seen := map[string]bool{}
	out := make([]model.RequirementProfile, 0, len(f.Profiles))
	for i, p := range f.Profiles {
		if p.Reliability == nil {
			return nil, fmt.Errorf("profiles: profile %d (%q): missing reliability", i+1, p.Name)
		}
		d, err := time.ParseDuration(p.Latency)
		if err != nil {
			return nil, fmt.Errorf("profiles: profile %d (%q): latency %q: want a duration like 150ms or 5s", i+1, p.Name, p.Latency)
		}
		rp := model.RequirementProfile{Name: p.Name, LatencyNs: int64(d), Reliability: *p.Reliability, Source: "file"}
		if err := checkProfile(rp); err != nil {
			return nil, fmt.Errorf("profiles: profile %d: %w", i+1, err)
		}
		if seen[p.Name] {
			return nil, fmt.Errorf("profiles: profile %d: name %q used twice", i+1, p.Name)
		}
		seen[p.Name] = true
		out = append(out, rp)
	}
	return out, nil
}

// checkProfile bounds one profile: a printable name of 1 to 64 characters,
// a latency in (0, 1000 s], a reliability strictly between 0 and 1 (a
// requirement of 1 can never be shown met by a finite sample).
func checkProfile(p model.RequirementProfile) error {
	if p.Name == "" || len(p.Name) > maxNameLen {
		return fmt.Errorf("profile name %q: want 1 to %d bytes", p.Name, maxNameLen)
	}
	for _, r := range p.Name {
		if !unicode.IsPrint(r) {
			return fmt.Errorf("profile name %q: unprintable character", p.Name)
		}
	}
	if p.LatencyNs <= 0 || p.LatencyNs > maxLatencyNs {
		return fmt.Errorf("profile %q: latency %v out of range (0, 1000s]", p.Name, time.Duration(p.LatencyNs))
	}
	if math.IsNaN(p.Reliability) || p.Reliability <= 0 || p.Reliability >= 1 {
		return fmt.Errorf("profile %q: reliability %g: want a fraction strictly between 0 and 1 (0.99 for 99%%)", p.Name, p.Reliability)
	}
	return nil
}

// ReadProfilesFile reads a requirement profile file (ParseProfiles),
// refusing one over MaxProfileFile before reading it all. Errors carry no
// "profiles:" prefix: the caller names the file.
func ReadProfilesFile(path string) ([]model.RequirementProfile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, errors.Unwrap(err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxProfileFile+1))
	if err != nil {
		return nil, err
	}
	p, err := ParseProfiles(b)
	if err != nil {
		return nil, errors.New(strings.TrimPrefix(err.Error(), "profiles: "))
	}
	return p, nil
}

// ParseThresholds reads the latency requirements L of R(L), a
// comma-separated list of positive durations (100ms,1.2s); the analysis
// bounds their number and values.
func ParseThresholds(s string) ([]int64, error) {
	if len(s) > 1024 {
		return nil, fmt.Errorf("a list of %d bytes: too long", len(s))
	}
	var out []int64
	for _, f := range strings.Split(s, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(f))
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("%q: want positive durations like 100ms,1.2s", strings.TrimSpace(f))
		}
		out = append(out, int64(d))
	}
	return out, nil
}
