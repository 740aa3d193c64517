package report

import (
	"fmt"
	"strings"

	"github.com/sonde-project/sonde/internal/mbm"
	"github.com/sonde-project/sonde/internal/model"
)

// MaxMBMBytes bounds a saved MBM result or composition that LoadMBM reads
// (sonde mbm compose and summary read many).
const MaxMBMBytes = 16 << 20

// Bounds of the strings a summary keys its groups on, and of the tests a
// saved MBM file holds.
const (
	maxMBMTestID    = 16
	maxMBMTransport = 8
	maxMBMSubpath   = 64
	maxMBMTests     = 64
)

// LoadMBM reads a saved MBM result (r, schema sonde.mbm/v1) or
// composition (c, sonde.mbm-compose/v1), at most MaxMBMBytes, checked
// field by field: a result must be measured (not a plan) and hold 1 to 64
// tests with known verdicts. It is the one reader of saved MBM files for
// compose and summary; sonde report reads them with Load. Every error is
// an *InputError naming the file in one line.
func LoadMBM(path string) (r *model.MBMResult, c *model.MBMComposition, err error) {
	b, err := readSaved(path, MaxMBMBytes)
	if err != nil {
		return nil, nil, err
	}
	s, err := Decode(path, b)
	if err != nil {
		return nil, nil, err
	}
	switch v := s.v.(type) {
	case *model.MBMResult:
		if err := checkMBMResult(path, v); err != nil {
			return nil, nil, &InputError{err}
		}
		return v, nil, nil
	case *model.MBMComposition:
		if err := checkMBMComposition(path, v); err != nil {
			return nil, nil, &InputError{err}
		}
		return nil, v, nil
	}
	return nil, nil, inputErrorf("%s: schema %s, want %s or %s", path, s.Schema(), model.MBMSchemaVersion, model.MBMComposeSchemaVersion)
}

// checkMBMResult refuses what is not a measured result: a plan, no tests
// or too many, strings longer than a summary keys on, unknown verdicts,
// negative counts. Test names are clipped.
func checkMBMResult(name string, r *model.MBMResult) error {
	switch {
	case r.Plan:
		return fmt.Errorf("%s: a plan, not a result: nothing was measured", name)
	case len(r.Tests) == 0:
		return fmt.Errorf("%s: no tests", name)
	case len(r.Tests) > maxMBMTests:
		return fmt.Errorf("%s: %d tests, more than %d", name, len(r.Tests), maxMBMTests)
	case len(r.Subpath) > maxMBMSubpath:
		return fmt.Errorf("%s: subpath longer than %d bytes", name, maxMBMSubpath)
	}
	for i, t := range r.Tests {
		switch {
		case len(t.ID) > maxMBMTestID || len(t.Transport) > maxMBMTransport:
			return fmt.Errorf("%s: test %d: id or transport too long (%q, %q)", name, i+1, clipText(t.ID), clipText(t.Transport))
		case !t.Verdict.Valid():
			var want []string
			for _, v := range model.MBMVerdicts {
				want = append(want, string(v))
			}
			return fmt.Errorf("%s: test %s: verdict %q, want one of %s", name, clipText(t.ID), clipText(string(t.Verdict)), strings.Join(want, ", "))
		case t.Packets < 0 || t.Marks < 0:
			return fmt.Errorf("%s: test %s: negative counts", name, clipText(t.ID))
		}
		r.Tests[i].Name = clipText(t.Name)
	}
	return nil
}

// checkMBMComposition bounds a composition's tests and subpaths.
func checkMBMComposition(name string, c *model.MBMComposition) error {
	if len(c.Tests) > maxMBMTests {
		return fmt.Errorf("%s: %d tests, more than %d", name, len(c.Tests), maxMBMTests)
	}
	for _, t := range c.Tests {
		if len(t.ID) > maxMBMTestID || len(t.SubpathPackets) > mbm.MaxSubpaths {
			return fmt.Errorf("%s: test %q: id longer than %d bytes or more than %d subpaths", name, clipText(t.ID), maxMBMTestID, mbm.MaxSubpaths)
		}
	}
	return nil
}

// clipText keeps text read from a file short in an error message.
func clipText(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
