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
	cmd.SetArgs([]string{"-t", "300ms", "--interval", "5ms", "--profile", "voice", "--timeout", "1s",
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
		{"--interval", "50us"}, {"--ecn", "9"}, {"--dscp", "99"}, {"--profile", "video"}, {"-s", "46"}, {"-q"},
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

// The text summary names the reflector's format and the replies it could
// not read, instead of reporting silence.
func TestUDPTextFormatAndUnparsed(t *testing.T) {
	res := &model.UDPResult{Flows: []model.UDPFlow{{Name: "probe", Sent: 150, ReflectorFormat: "twamp-light",
		UnparsedReplies: []model.UnparsedReplies{{Bytes: 38, Count: 150, Reason: "shorter than the 41-octet TWAMP-Light reflector packet"}}}}}
	var b strings.Builder
	if err := writeUDPText(&b, res); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"speaks TWAMP-Light (RFC 5357", "150 replies of 38 bytes, not STAMP or TWAMP-Light"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
}
