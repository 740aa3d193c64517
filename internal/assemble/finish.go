package assemble

import (
	"github.com/sonde-project/sonde/internal/grade"
	"github.com/sonde-project/sonde/internal/model"
)

// Finish completes a result once everything is measured: it reads the
// grades (internal/grade), so `sonde test` and the page's results carry the
// same letters. Call it last, after the errors and notes are in.
func Finish(r *model.Result) {
	r.Grades = grade.Of(r)
}
