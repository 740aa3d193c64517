//go:build !monitoronly

package main

import (
	"github.com/sonde-project/sonde/internal/lab"
	"github.com/sonde-project/sonde/internal/model"
)

// `sonde mbm --lab PROFILE` (docs/mbm.md, "In the lab"): the parent builds
// the lab and re-runs the command in its client namespace with
// --ground-truth (mbm_lab_linux.go); the client records the profile and
// its configured path in the result, so that a result can be repeated and
// its verdicts read against what the path was.

// labTruth reads --ground-truth, the configured path a lab parent passes
// to its client; nil without one.
func (o *mbmFlags) labTruth() (*model.GroundTruth, error) {
	return lab.ReadTruthFile(o.truthFile)
}
