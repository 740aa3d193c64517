package report

import (
	"fmt"
	"strings"

	"github.com/sonde-project/sonde/internal/fileargs"
	"github.com/sonde-project/sonde/internal/mbm"
	"github.com/sonde-project/sonde/internal/model"
)

// MaxMBMFiles bounds the files one summary reads (each at most
// MaxMBMBytes, read one at a time).
const MaxMBMFiles = 10000

// LoadMBMResult reads one saved MBM result, not a composition (LoadMBM).
func LoadMBMResult(path string) (model.MBMResult, error) {
	r, _, err := LoadMBM(path)
	if err != nil {
		return model.MBMResult{}, err
	}
	if r == nil {
		return model.MBMResult{}, fmt.Errorf("%s: a composition (%s), not a result", path, model.MBMComposeSchemaVersion)
	}
	return *r, nil
}

// ComposeMBMFiles composes the saved results of a path's subpaths (`sonde
// mbm compose`, mbm.ComposeResults), all for one target and path p0, and
// records beside each test the end-to-end result e2ePath measured on the
// same path ("": none). Every error is about the files given: a usage
// error to the CLI.
func ComposeMBMFiles(paths []string, e2ePath string) (model.MBMComposition, error) {
	var rs []model.MBMResult
	for _, p := range paths {
		r, err := LoadMBMResult(p)
		if err != nil {
			return model.MBMComposition{}, err
		}
		if len(rs) > 0 && (r.Target != rs[0].Target || r.Model.PathP0 != rs[0].Model.PathP0) {
			return model.MBMComposition{}, fmt.Errorf("%s: target or path p0 differs from %s: subpaths compose only for one target", p, paths[0])
		}
		rs = append(rs, r)
	}
	c, err := mbm.ComposeResults(paths, rs)
	if err != nil || e2ePath == "" {
		return c, err
	}
	e2e, err := LoadMBMResult(e2ePath)
	if err != nil {
		return c, fmt.Errorf("--path: %w", err)
	}
	if e2e.Target != rs[0].Target || e2e.Model.PathP0 != rs[0].Model.PathP0 {
		return c, fmt.Errorf("--path %s: target or path p0 differs from %s: not the same path's target", e2ePath, paths[0])
	}
	mbm.AddMeasured(&c, e2ePath, e2e)
	return c, nil
}

// MBMFiles lists the files of args (`sonde mbm summary`): files as given,
// directories' *.json files in name order; at most MaxMBMFiles, counted
// before any is read.
func MBMFiles(args []string) ([]string, error) {
	return fileargs.Expand(args, func(name string) bool { return strings.HasSuffix(name, ".json") }, ".json files", MaxMBMFiles)
}

// SummarizeMBMFiles reads the saved results and compositions of args
// (MBMFiles, LoadMBM) one at a time into their summary.
func SummarizeMBMFiles(args []string) (model.MBMSummary, error) {
	files, err := MBMFiles(args)
	if err != nil {
		return model.MBMSummary{}, err
	}
	sum := NewMBMSummarizer()
	for _, f := range files {
		r, c, err := LoadMBM(f)
		if err != nil {
			return model.MBMSummary{}, err
		}
		if r != nil {
			sum.AddResult(r)
		} else {
			sum.AddComposition(c)
		}
	}
	return sum.Summary(), nil
}
