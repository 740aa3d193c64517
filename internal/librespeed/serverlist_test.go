package librespeed

import (
	"strings"
	"testing"
)

func TestParseServerList(t *testing.T) {
	list, err := ParseServerList([]byte(`[
	 {"id": 1, "name": "Lab A", "server": "//198.18.0.2:8080/", "dlURL": "garbage.php", "ulURL": "empty.php", "pingURL": "empty.php", "getIpURL": "getIP.php", "sponsorName": "x", "sponsorURL": "https://x.example/"},
	 {"id": 2, "name": "Lab B", "server": "https://198.18.0.3/", "unknown": true}]`))
	if err != nil || len(list) != 2 || list[0].Name != "Lab A" || list[1].Server != "https://198.18.0.3/" || list[0].DlURL != "garbage.php" {
		t.Fatalf("%+v %v", list, err)
	}
	for in, want := range map[string]string{"//198.18.0.2:8080/": "//198.18.0.2:8080", "https://h.example/x/": "https://h.example", "http://[::1]:9/": "http://[::1]:9"} {
		if got, err := ServerOrigin(in); got != want || err != nil {
			t.Errorf("ServerOrigin(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for name, in := range map[string]string{
		"not an array":   `{"name":"a","server":"//h/"}`,
		"no name":        `[{"server":"//h/"}]`,
		"ftp":            `[{"name":"a","server":"ftp://h/"}]`,
		"no host":        `[{"name":"a","server":"garbage.php"}]`,
		"javascript":     `[{"name":"a","server":"javascript:alert(1)"}]`,
		"query":          `[{"name":"a","server":"//h/?x=1"}]`,
		"user":           `[{"name":"a","server":"http://u:p@h/"}]`,
		"control char":   `[{"name":"a\u0000","server":"//h/"}]`,
		"long field":     `[{"name":"` + strings.Repeat("x", maxServerField+1) + `","server":"//h/"}]`,
		"trailing data":  `[] []`,
		"too many":       "[" + strings.Repeat(`{"name":"a","server":"//h/"},`, MaxServers) + `{"name":"a","server":"//h/"}]`,
		"too many bytes": "[" + strings.Repeat(" ", MaxServerListBytes) + "]",
	} {
		if _, err := ParseServerList([]byte(in)); err == nil {
			t.Errorf("%s: accepted", name)
		} else if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: two lines: %v", name, err)
		}
	}
}
