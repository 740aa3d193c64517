package main

import (
	"io"
	"strconv"
	"unicode/utf8"
)

// table lays out text columns two spaces apart, left-aligned (right with
// alignRight). It replaces
// text/tabwriter for the analyser's connection tables: tabwriter scans and
// pads cell by cell, and a capture of tens of thousands of connections
// spent more time in it than in reading the capture.
type table struct {
	rows       [][]string
	width      []int
	alignRight bool
}

func (t *table) row(cells ...string) {
	for i, c := range cells {
		if i >= len(t.width) {
			t.width = append(t.width, 0)
		}
		t.width[i] = max(t.width[i], utf8.RuneCountInString(c))
	}
	t.rows = append(t.rows, cells)
}

func (t *table) write(w io.Writer) error {
	var line []byte
	for _, r := range t.rows {
		line = line[:0]
		for i, c := range r {
			pad := t.width[i] - utf8.RuneCountInString(c)
			if t.alignRight {
				line = appendSpaces(line, pad+2)
				line = append(line, c...)
				continue
			}
			line = append(line, c...)
			if i < len(r)-1 {
				line = appendSpaces(line, pad+2)
			}
		}
		line = append(line, '\n')
		if _, err := w.Write(line); err != nil {
			return err
		}
	}
	return nil
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
