package dscp

import "testing"

func TestParse(t *testing.T) {
	for in, want := range map[string]int{"ef": 46, "EF": 46, "0": 0, "63": 63, "af41": 34, "cs1": 8, " be ": 0} {
		got, err := Parse(in)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"64", "-1", "x", "", "4.5"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}

func TestParseClasses(t *testing.T) {
	cs, err := ParseClasses("ef:46,be:0,cs1:8@8081, voice:ef")
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 4 || cs[0].DSCP != 46 || cs[2].Port != 8081 || cs[2].DSCP != 8 || cs[3].DSCP != 46 {
		t.Fatalf("got %+v", cs)
	}
	for _, bad := range []string{"", "ef", "ef:99", "a:1,a:2", "x:1@0", "x:1@70000", ":3"} {
		if _, err := ParseClasses(bad); err == nil {
			t.Errorf("ParseClasses(%q) accepted", bad)
		}
	}
}

// TestParseECN: numbers and names of the four codepoints; anything else
// is refused.
func TestParseECN(t *testing.T) {
	for in, want := range map[string]int{"0": 0, "not-ect": 0, "ect1": 1, "ECT(1)": 1, "2": 2, "ect0": 2, " ce ": 3, "3": 3} {
		if v, err := ParseECN(in); err != nil || v != want {
			t.Errorf("ParseECN(%q) = %d, %v; want %d", in, v, err, want)
		}
	}
	for _, in := range []string{"4", "-1", "ect", ""} {
		if _, err := ParseECN(in); err == nil {
			t.Errorf("ParseECN(%q): no error", in)
		}
	}
}

// TestParseSourceClasses: each class's local port by position, empty
// items skipped; a server port (@) and a bad port are refused.
func TestParseSourceClasses(t *testing.T) {
	cs, err := ParseSourceClasses("ef:46/src=5004,,be:0")
	if err != nil || len(cs) != 2 || cs[0].Name != "ef" || cs[0].DSCP != 46 || cs[0].Port != 5004 || cs[1].Port != 0 {
		t.Fatalf("%+v %v", cs, err)
	}
	for _, in := range []string{"ef:46@8081", "ef:46/src=0", "ef:46/src=70000", "ef:46/src=x"} {
		if _, err := ParseSourceClasses(in); err == nil {
			t.Errorf("ParseSourceClasses(%q): no error", in)
		}
	}
}
