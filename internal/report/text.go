package report

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/sonde-project/sonde/internal/model"
)

// Text layout: 80 columns, a two-space indent, a label column, then values.
const (
	textWidth  = 80
	labelWidth = 13
	valueCol   = 2 + labelWidth + 1
)

// WriteText writes the human summary printed by `sonde test`. It handles
// partial results: every section whose data is missing is left out, and a
// nil result prints a one-line notice.
func WriteText(w io.Writer, r *model.Result) error {
	var b strings.Builder
	if r == nil {
		b.WriteString("sonde: no result\n")
	} else {
		writeTextView(&b, buildView(r))
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("report: write text: %w", err)
	}
	return nil
}

func writeTextView(b *strings.Builder, v view) {
	b.WriteString("sonde test\n")
	writeRows(b, v.Header)
	if v.Grades != nil {
		b.WriteString("\nGrades\n")
		writeRows(b, v.Grades)
	}

	if v.Baseline != nil {
		b.WriteString("\nBaseline (idle)\n")
		writeRows(b, v.Baseline)
	}
	for _, d := range v.Directions {
		b.WriteString("\n" + d.Title + "\n")
		writeRows(b, d.Summary)
		if d.Verdict != "" {
			writeRows(b, []row{{Label: "verdict", Value: d.Verdict}})
		}
		if d.RFC != nil {
			b.WriteString("\n  " + d.RFCTitle + "\n")
			writeRows(b, d.RFC)
		}
		if len(d.Flows) > 0 {
			b.WriteString("\n")
			writeFlowTable(b, d.Flows)
		}
	}
	if len(v.Classes) > 0 {
		title := "QoS classes"
		if v.ClassesDur != "" {
			title += " (" + v.ClassesDur + ")"
		}
		b.WriteString("\n" + title + "\n")
		writeClassTable(b, v.Classes)
	}
	writeList(b, "Notes", v.Notes)
	writeList(b, "Errors", v.Errors)
}

// writeRows prints label/value rows. The note follows the value in
// parentheses when the line has room, else on the next line under the value.
func writeRows(b *strings.Builder, rows []row) {
	for _, r := range rows {
		prefix := "  " + padRight(r.Label, labelWidth) + " "
		value := r.Value
		if value == "" {
			value = "-"
		}
		note := ""
		if r.Note != "" {
			note = "(" + r.Note + ")"
		}
		one := value
		if note != "" {
			one += "  " + note
		}
		if valueCol+utf8.RuneCountInString(one) <= textWidth {
			writeWrapped(b, prefix, one)
			continue
		}
		writeWrapped(b, prefix, value)
		if note != "" {
			writeWrapped(b, strings.Repeat(" ", valueCol), note)
		}
	}
}

// writeWrapped prints text after prefix, wrapping at spaces to textWidth and
// indenting continuation lines to the prefix's width.
func writeWrapped(b *strings.Builder, prefix, text string) {
	indent := strings.Repeat(" ", utf8.RuneCountInString(prefix))
	for i, line := range wrap(text, textWidth-utf8.RuneCountInString(prefix)) {
		if i == 0 {
			b.WriteString(prefix)
		} else {
			b.WriteString(indent)
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
}

// wrap splits text into lines of at most width runes, breaking at spaces; a
// single word longer than width gets a line of its own.
func wrap(text string, width int) []string {
	if width < 10 {
		width = 10
	}
	words := strings.Fields(text)
	if len(words) == 0 {
		return []string{""}
	}
	var lines []string
	line := words[0]
	for _, w := range words[1:] {
		if utf8.RuneCountInString(line)+1+utf8.RuneCountInString(w) > width {
			lines = append(lines, line)
			line = w
			continue
		}
		line += " " + w
	}
	return append(lines, line)
}

func padRight(s string, n int) string {
	if c := utf8.RuneCountInString(s); c < n {
		return s + strings.Repeat(" ", n-c)
	}
	return s
}

func writeFlowTable(b *strings.Builder, flows []flowRow) {
	rx := false
	for _, f := range flows {
		rx = rx || f.RxDSCP != "-"
	}
	t := table{indent: "  ", right: []bool{true, true, true, true, true, true, false, true}}
	head := []string{"flow", "goodput", "warm-up", "efficiency", "rwnd-lim", "sndbuf-lim", "limit", "rx DSCP"}
	if !rx {
		head = head[:7]
	}
	t.row(head...)
	for _, f := range flows {
		t.row([]string{f.ID, f.Goodput, f.Warmup, f.Efficiency, f.Rwnd, f.Sndbuf, f.Verdict, f.RxDSCP}[:len(head)]...)
	}
	_ = t.write(b) // a strings.Builder does not fail
}

func writeClassTable(b *strings.Builder, classes []classRow) {
	t := table{indent: "  ", right: []bool{false, false, true, true, true, true, true, false}}
	t.row("class", "dir", "DSCP", "goodput", "RTT med", "RTT p90", "rx DSCP", "marks")
	for _, c := range classes {
		t.row(c.Name, c.Direction, c.DSCP, c.Goodput, c.RTTMedian, c.RTTP90, c.RxDSCP, c.Marks)
	}
	_ = t.write(b)
}

func writeList(b *strings.Builder, title string, items []string) {
	if len(items) == 0 {
		return
	}
	b.WriteString("\n" + title + "\n")
	for _, it := range items {
		writeWrapped(b, "  - ", it)
	}
}
