package report

import (
	"encoding/csv"
	"io"
	"strconv"
	"unicode/utf8"
)

// table is the one text table of every report: columns sized to their
// widest cell, two spaces apart, each left-aligned or right-aligned
// (numbers), trailing blanks trimmed. It builds lines in a byte buffer
// rather than using text/tabwriter, which pads cell by cell: a capture of
// tens of thousands of connections spent more time there than in reading
// the capture. The same rows give CSV.
type table struct {
	indent string // before every line
	right  []bool // right-aligned columns; columns past its end are left-aligned
	rows   [][]string
	width  []int
}

func (t *table) row(cells ...string) {
	t.measure(cells...)
	t.rows = append(t.rows, cells)
}

func (t *table) isRight(i int) bool { return i < len(t.right) && t.right[i] }

func (t *table) write(w io.Writer) error {
	var line []byte
	for _, r := range t.rows {
		var err error
		if line, err = t.writeRow(w, line, r); err != nil {
			return err
		}
	}
	return nil
}

// measure sizes the columns for cells without keeping them: a table too
// long to hold (every connection of a long capture) is measured in one
// pass over its rows and written with writeRow in a second.
func (t *table) measure(cells ...string) {
	for i, c := range cells {
		if i >= len(t.width) {
			t.width = append(t.width, 0)
		}
		t.width[i] = max(t.width[i], utf8.RuneCountInString(c))
	}
}

// rowCells is a row whose cells are formatted into one buffer, reused
// from row to row: a table of every connection of a capture is measured
// and written without a string per cell.
type rowCells struct {
	b   []byte
	end []int // where each cell ends in b
}

func (r *rowCells) reset() { r.b, r.end = r.b[:0], r.end[:0] }

// next ends the cell being appended to b.
func (r *rowCells) next() { r.end = append(r.end, len(r.b)) }

func (r *rowCells) cell(i int) []byte {
	if i == 0 {
		return r.b[:r.end[0]]
	}
	return r.b[r.end[i-1]:r.end[i]]
}

// measureCells is measure's for a rowCells.
func (t *table) measureCells(r *rowCells) {
	for i := range r.end {
		if i >= len(t.width) {
			t.width = append(t.width, 0)
		}
		t.width[i] = max(t.width[i], utf8.RuneCount(r.cell(i)))
	}
}

// writeRow writes one row at the table's widths, building it in line (a
// buffer reused from row to row, returned).
func (t *table) writeRow(w io.Writer, line []byte, r []string) ([]byte, error) {
	var rc rowCells
	for _, c := range r {
		rc.b = append(rc.b, c...)
		rc.next()
	}
	return t.writeCells(w, line, &rc)
}

// writeCells is writeRow's for a rowCells.
func (t *table) writeCells(w io.Writer, line []byte, r *rowCells) ([]byte, error) {
	line = append(line[:0], t.indent...)
	for i := range r.end {
		c := r.cell(i)
		if i > 0 {
			line = append(line, ' ', ' ')
		}
		pad := t.width[i] - utf8.RuneCount(c)
		if t.isRight(i) {
			line = appendSpaces(line, pad)
			line = append(line, c...)
			continue
		}
		line = append(line, c...)
		if i < len(r.end)-1 {
			line = appendSpaces(line, pad)
		}
	}
	for len(line) > len(t.indent) && line[len(line)-1] == ' ' {
		line = line[:len(line)-1]
	}
	line = append(line, '\n')
	_, err := w.Write(line)
	return line, err
}

// writeCSV writes the rows as CSV (RFC 4180), the first row being the head.
func (t *table) writeCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.WriteAll(t.rows); err != nil {
		return err
	}
	return cw.Error()
}

func appendSpaces(b []byte, n int) []byte {
	for ; n > 0; n-- {
		b = append(b, ' ')
	}
	return b
}

// num formats a count cell.
func num[T int | uint64](v T) string { return strconv.FormatInt(int64(v), 10) }

// fixed formats a float cell with prec decimals.
func fixed(v float64, prec int) string { return strconv.FormatFloat(v, 'f', prec, 64) }

// Table is the one text table for the listings of commands (sonde store
// monitors, sonde lab list): the table of every report, left-aligned.
type Table struct{ t table }

// Row adds a row; the first is the heading.
func (t *Table) Row(cells ...string) { t.t.row(cells...) }

// Write writes the rows, columns two spaces apart.
func (t *Table) Write(w io.Writer) error { return t.t.write(w) }
