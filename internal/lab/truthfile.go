package lab

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/sonde-project/sonde/internal/model"
)

// MaxTruthFile bounds a ground-truth file (--ground-truth, what a Rerun
// passes to its client): its JSON takes a few hundred bytes.
const MaxTruthFile = 64 << 10

// ReadTruthFile reads the ground truth a lab parent passes to its client
// (--ground-truth FILE), bounded before it is read whole; "" (a run
// outside a lab) has none: nil.
func ReadTruthFile(name string) (*model.GroundTruth, error) {
	if name == "" {
		return nil, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("--ground-truth: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxTruthFile+1))
	if err != nil {
		return nil, fmt.Errorf("--ground-truth: %w", err)
	}
	t, err := ParseTruth(b)
	if err != nil {
		return nil, fmt.Errorf("--ground-truth %s: %w", name, err)
	}
	return t, nil
}

// ParseTruth reads a ground truth's JSON, bounded in size.
func ParseTruth(b []byte) (*model.GroundTruth, error) {
	if len(b) > MaxTruthFile {
		return nil, fmt.Errorf("larger than %d KiB", MaxTruthFile>>10)
	}
	var t model.GroundTruth
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, err
	}
	return &t, nil
}
