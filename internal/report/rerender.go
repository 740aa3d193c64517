package report

import (
	"fmt"
	"io"
)

// LoadSame reads saved results (Load) that must be of one kind to be set
// side by side: every error is found before anything is written, naming
// the file.
func LoadSame(paths []string) ([]*Saved, error) {
	var saved []*Saved
	for _, p := range paths {
		s, err := Load(p)
		if err != nil {
			return nil, err
		}
		if len(saved) > 0 && s.Schema() != saved[0].Schema() {
			return nil, fmt.Errorf("cannot compare results of different kinds: %s is %s, %s is %s", saved[0].Name, saved[0].Schema(), s.Name, s.Schema())
		}
		saved = append(saved, s)
	}
	return saved, nil
}

// RerenderForms are the forms `sonde report` writes of saved results:
// one result's own text and HTML, or the comparison of several; the
// headline figures as CSV either way.
func RerenderForms(saved []*Saved) Forms {
	f := Forms{Text: saved[0].WriteText, HTML: saved[0].WriteHTML,
		CSV: func(w io.Writer) error { return WriteCompareCSV(w, saved) }}
	if len(saved) > 1 {
		f.Text = func(w io.Writer) error { return WriteCompareText(w, saved) }
		f.HTML = func(w io.Writer) error { return WriteCompareHTML(w, saved) }
	}
	return f
}
