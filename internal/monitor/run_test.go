package monitor

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOverride: only the flags given replace the file's values, a
// renamed flag under its new name.
func TestOverride(t *testing.T) {
	file := Config{Targets: []string{"a:1"}, Up: "1M", Down: "8M", Name: "file", Store: "f.db"}
	flags := Config{Targets: []string{"b:2"}, Up: "2M", Down: "16M", Name: "flag", Store: "g.db"}
	given := map[string]bool{"up-link-rate": true, "name": true}
	file.Override(flags, func(f string) bool { return given[f] })
	if file.Up != "2M" || file.Name != "flag" || file.Down != "8M" || file.Targets[0] != "a:1" || file.Store != "f.db" {
		t.Errorf("%+v", file)
	}
}

// TestFetchStatus: a daemon's status is read and parsed; one that does not
// answer or answers something else is one line naming it.
func TestFetchStatus(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/status", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"name":"m"}`)) })
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	defer srv.Close()
	body, st, err := FetchStatus(context.Background(), ln.Addr().String())
	if err != nil || string(body) != `{"name":"m"}` || st == nil {
		t.Fatalf("%q %+v %v", body, st, err)
	}
	free, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := free.Addr().String()
	free.Close()
	if _, _, err := FetchStatus(context.Background(), addr); err == nil || !strings.HasPrefix(err.Error(), "no monitor answers at "+addr) {
		t.Errorf("closed port: %v", err)
	}
}

// TestLoadAlertRules: no file is the default rules; a missing file or
// profile file is refused naming it.
func TestLoadAlertRules(t *testing.T) {
	if _, err := LoadAlertRules(""); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "m.json")
	os.WriteFile(cfg, []byte(`{"profiles": "`+filepath.Join(dir, "none.json")+`"}`), 0o644)
	for _, p := range []string{filepath.Join(dir, "nope.json"), cfg} {
		if _, err := LoadAlertRules(p); err == nil || !strings.Contains(err.Error(), filepath.Base(p)) && !strings.Contains(err.Error(), "none.json") {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// TestFlagsPlan: the file's deprecated keys are noted, the flags given
// override it, --rate and --probe-interval together are refused, and a
// bad --label or --keep-raw names its flag.
func TestFlagsPlan(t *testing.T) {
	file := filepath.Join(t.TempDir(), "m.json")
	os.WriteFile(file, []byte(`{"targets": ["stamp://198.18.0.1"], "rate": 20, "store": ":memory:", "name": "m"}`), 0o644)
	given := map[string]bool{}
	f := Flags{File: file, ProbeInterval: 200 * time.Millisecond, Given: func(n string) bool { return given[n] }}
	var warn strings.Builder
	p, err := f.Plan(&warn)
	if err != nil || p.Rate != 20 || !strings.Contains(warn.String(), `config key "rate" is deprecated`) {
		t.Fatalf("%+v, %v, %q", p, err, warn.String())
	}
	given["probe-interval"] = true
	if p, err = f.Plan(io.Discard); err != nil || p.Rate != 5 {
		t.Fatalf("--probe-interval over the file: %+v, %v", p, err)
	}
	given["rate"] = true
	if _, err := f.Plan(io.Discard); err == nil || !strings.Contains(err.Error(), "give one") {
		t.Errorf("--rate and --probe-interval: %v", err)
	}
	for flag, mod := range map[string]func(*Flags){"--label": func(f *Flags) { f.Labels = []string{"nokey"} }, "--keep-raw": func(f *Flags) { f.KeepRaw = "soon" }} {
		g := Flags{File: file, Given: func(n string) bool { return "--"+n == flag }}
		mod(&g)
		if _, err := g.Plan(io.Discard); err == nil || !strings.HasPrefix(err.Error(), flag) {
			t.Errorf("%s: %v", flag, err)
		}
	}
}

// TestFetchStatusBadListen: an address that cannot be a daemon's is the
// user's mistake (a ConfigError), found before anything is sent.
func TestFetchStatusBadListen(t *testing.T) {
	_, _, err := FetchStatus(context.Background(), "localhost")
	var ce *ConfigError
	if !errors.As(err, &ce) || err.Error() != `--listen "localhost": want host:port` {
		t.Errorf("%v, want a ConfigError naming --listen", err)
	}
}
