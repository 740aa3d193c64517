package report

import (
	"fmt"
	"strings"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/units"
)

// resultGrades are the result's own grades (assemble.Finish puts them
// there). A result saved before grades were part of it renders as it did
// then: sonde report shows what a file holds, and re-rendering a saved
// file of the last release gives the same report (golden_test.go).
func resultGrades(r *model.Result) *model.Grades { return r.Grades }

// gradeLevel maps a grade to a verdict level.
func gradeLevel(g string) string {
	switch g {
	case "A+", "A", "B", "Good", "Excellent", "High", "good", "great":
		return levelOK
	case "C", "Fair", "Medium", "average":
		return levelWarn
	}
	return levelBad
}

// bandText prints a scale: "A+ < 5, A < 30, ..., F ≥ 400 ms".
func bandText(bands []model.Band, unit string) string {
	var parts []string
	for i, b := range bands {
		if i == len(bands)-1 {
			parts = append(parts, fmt.Sprintf("%s ≥ %g", b.Name, bands[i-1].Below))
		} else {
			parts = append(parts, fmt.Sprintf("%s < %g", b.Name, b.Below))
		}
	}
	return strings.Join(parts, ", ") + unit
}

var useCaseTitles = map[string]string{"streaming": "streaming", "gaming": "gaming", "video_calls": "video calls"}

// gradeRows shows the grades with their inputs and thresholds.
func gradeRows(g *model.Grades) []row {
	if g == nil {
		return nil
	}
	var rows []row
	if g.Limit != "" {
		rows = append(rows, row{Label: "limit", Value: g.Limit})
	}
	if b := g.Bufferbloat; b != nil {
		for _, x := range []struct {
			name string
			l    *model.LetterGrade
		}{{"overall", b.Overall}, {"download", b.Download}, {"upload", b.Upload}, {"bidir", b.Bidir}} {
			if x.l == nil {
				continue
			}
			rows = append(rows, row{Label: "bufferbloat " + x.name, Value: x.l.Grade, Level: gradeLevel(x.l.Grade),
				Note: FormatDeltaMs(x.l.AddedMs) + " mean under load: " + FormatMs(x.l.LoadedMs) + " vs idle " + FormatMs(b.IdleMs)})
		}
		rows = append(rows, row{Label: "  scale", Value: "DSLReports: " + bandText(b.Thresholds, " ms added")})
	}
	for _, p := range g.Responsiveness {
		rows = append(rows, row{Label: "RPM " + p.Direction, Value: formatRPM(p.RPM) + " RPM, " + p.Band, Level: gradeLevel(p.Band),
			Note: "IETF draft: " + bandText(p.Thresholds, "") + "; Apple-style " + p.Apple})
	}
	for _, u := range g.UseCases {
		var in []string
		for _, x := range u.Inputs {
			v := "not measured"
			if x.Measured {
				switch x.Unit {
				case "ms":
					v = FormatMs(x.Value)
				case "ratio":
					v = FormatPct(x.Value*100, 2)
				default:
					v = units.FormatRate(x.Value)
				}
			}
			in = append(in, fmt.Sprintf("%s %s %+g", strings.ReplaceAll(x.Metric, "_", " "), v, x.Points))
		}
		rows = append(rows, row{Label: useCaseTitles[u.Name], Value: u.Class, Level: gradeLevel(u.Class),
			Note: fmt.Sprintf("%g points; Cloudflare AIM cut-offs %s; %s", u.Points, joinFloats(u.Cutoffs, "/"), strings.Join(in, ", "))})
	}
	for _, n := range g.Notes {
		rows = append(rows, row{Label: "note", Value: n})
	}
	return rows
}

// gradeCards are the headline grades of the HTML report.
func gradeCards(g *model.Grades) []card {
	if g == nil {
		return nil
	}
	var cs []card
	if b := g.Bufferbloat; b != nil && b.Overall != nil {
		c := card{Label: "Bufferbloat", Value: b.Overall.Grade, Level: gradeLevel(b.Overall.Grade)}
		var per []string
		if b.Download != nil {
			per = append(per, "down "+b.Download.Grade)
		}
		if b.Upload != nil {
			per = append(per, "up "+b.Upload.Grade)
		}
		if b.Bidir != nil {
			per = append(per, "bidir "+b.Bidir.Grade)
		}
		c.Sub = strings.Join(per, ", ")
		cs = append(cs, c)
	}
	for _, u := range g.UseCases {
		cs = append(cs, card{Label: strings.ToUpper(useCaseTitles[u.Name][:1]) + useCaseTitles[u.Name][1:], Value: u.Class,
			Level: gradeLevel(u.Class), Sub: fmt.Sprintf("%g points", u.Points)})
	}
	return cs
}

func joinFloats(v []float64, sep string) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprintf("%g", x)
	}
	return strings.Join(s, sep)
}
