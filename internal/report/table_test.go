package report

import (
	"bytes"
	"testing"
)

func TestTable(t *testing.T) {
	for _, tc := range []struct {
		name string
		t    table
		want string
	}{
		{"left, ragged, trailing blanks trimmed", table{}, "a     bb  c\nlong\nx     y\n"},
		{"right with indent", table{indent: "  ", right: []bool{true, true, true}}, "     a  bb  c\n  long\n     x   y\n"},
		{"mixed", table{indent: "> ", right: []bool{false, true}}, "> a     bb  c\n> long\n> x      y\n"},
	} {
		tc.t.row("a", "bb", "c")
		tc.t.row("long")
		tc.t.row("x", "y", "")
		var b bytes.Buffer
		if err := tc.t.write(&b); err != nil {
			t.Fatal(err)
		}
		if b.String() != tc.want {
			t.Errorf("%s:\n%q\nwant\n%q", tc.name, b.String(), tc.want)
		}
	}
	var tb table
	tb.row("figure", "value")
	tb.row(`a "quoted", figure`, "1.5")
	var b bytes.Buffer
	if err := tb.writeCSV(&b); err != nil {
		t.Fatal(err)
	}
	if want := "figure,value\n\"a \"\"quoted\"\", figure\",1.5\n"; b.String() != want {
		t.Errorf("csv %q, want %q", b.String(), want)
	}
}
