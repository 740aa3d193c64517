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
