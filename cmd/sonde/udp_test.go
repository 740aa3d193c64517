//go:build !monitoronly

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sonde-project/sonde/internal/model"
)

func TestUDPCommandEmbedded(t *testing.T) {
	dir := t.TempDir()
	jsonFile, htmlFile, rawFile := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.html"), filepath.Join(dir, "raw.jsonl")
	cmd := newUDPCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"-t", "300ms", "--probe-interval", "5ms", "--preset", "voice", "--timeout", "1s",
		"--json", jsonFile, "--html", htmlFile, "--raw", rawFile})
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	t.Log("\n" + text)
	for _, want := range []string{"flow voice", "RTT", "forward", "backward", "MOS", "shared with the reflector"} {
		if !strings.Contains(text, want) {
			t.Errorf("summary lacks %q:\n%s", want, text)
		}
	}
	var res model.UDPResult
	b, err := os.ReadFile(jsonFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if res.Schema != model.UDPSchemaVersion || len(res.Flows) != 1 || res.Flows[0].Sent != 60 || res.Flows[0].DSCP != 46 {
		t.Fatalf("result %+v", res)
	}
	raw, _ := os.ReadFile(rawFile)
	if n := bytes.Count(raw, []byte("\n")); n != 60 {
		t.Errorf("raw records: %d lines, want 60", n)
	}
	html, _ := os.ReadFile(htmlFile)
	if !bytes.Contains(html, []byte("<svg")) {
		t.Error("HTML report without a histogram")
	}
}

func TestUDPCommandBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--probe-interval", "50us"}, {"--ecn", "9"}, {"--dscp", "99"}, {"--preset", "video"}, {"-s", "46"}, {"-q"},
	} {
		cmd := newUDPCmd()
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		cmd.SetArgs(append(args, "127.0.0.1:1"))
		if err := cmd.ExecuteContext(context.Background()); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}
