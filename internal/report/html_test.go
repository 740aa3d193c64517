package report

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/units"
)

// wellFormed parses doc as strict XML: every element closed and nested
// properly, attributes quoted, no unknown entities. The report template is
// written to be both HTML5 and XML for this reason. golang.org/x/net/html is
// not in this module, and an HTML5 parser would forgive the very mistakes
// this check looks for.
func wellFormed(doc string) error {
	d := xml.NewDecoder(strings.NewReader(doc))
	d.Strict = true
	var stack []string
	for i := 0; i < 1_000_000; i++ {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("not well-formed: %w (open: %v)", err, stack)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			stack = append(stack, el.Name.Local)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		}
	}
	if len(stack) != 0 {
		return fmt.Errorf("unclosed elements: %v", stack)
	}
	return nil
}

func checkWellFormed(t *testing.T, doc string) {
	t.Helper()
	if err := wellFormed(doc); err != nil {
		t.Fatal(err)
	}
}

// networkRefs lists anything that would make a browser fetch from the
// network: src/href/action attributes, CSS url()/@import, and elements that
// load content (<link>, <script>, <img>, <iframe>, ...).
func networkRefs(doc string) []string {
	var found []string
	d := xml.NewDecoder(strings.NewReader(doc))
	d.Strict = true
	refAttr := map[string]bool{"src": true, "href": true, "action": true, "poster": true, "data": true, "srcset": true}
	for i := 0; i < 1_000_000; i++ {
		tok, err := d.Token()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				found = append(found, "unparsable: "+err.Error())
			}
			break
		}
		el, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		switch el.Name.Local {
		case "link", "script", "iframe", "object", "embed", "img", "use", "image":
			found = append(found, "<"+el.Name.Local+">")
		}
		for _, a := range el.Attr {
			if refAttr[a.Name.Local] {
				found = append(found, a.Name.Local+"="+a.Value)
			}
		}
	}
	lower := strings.ToLower(doc)
	for _, bad := range []string{"url(", "@import", `src="http`, `href="http`, `href="//`, `src="//`} {
		if strings.Contains(lower, bad) {
			found = append(found, bad)
		}
	}
	return found
}

func checkSelfContained(t *testing.T, doc string) {
	t.Helper()
	if refs := networkRefs(doc); len(refs) > 0 {
		t.Errorf("report refers to outside resources: %q", refs)
	}
}

// TestCheckers makes sure the structure checks above can fail.
func TestCheckers(t *testing.T) {
	for _, bad := range []string{"<div><p></div>", "<div>", "<br>", "<p a=b></p>", "<p>&nbsp;</p>"} {
		if wellFormed(bad) == nil {
			t.Errorf("wellFormed(%q) passed", bad)
		}
	}
	if err := wellFormed(`<!DOCTYPE html><html><body><br/><p class="x">a &amp; b</p></body></html>`); err != nil {
		t.Errorf("good document rejected: %v", err)
	}
	for _, bad := range []string{`<a href="https://x/">x</a>`, `<div style="background:url(x.png)"></div>`,
		`<link rel="stylesheet"/>`, `<script>1</script>`, `<svg><image/></svg>`} {
		if len(networkRefs(bad)) == 0 {
			t.Errorf("networkRefs(%q) found nothing", bad)
		}
	}
	for in, want := range map[string]bool{"NaN ms": true, "+Inf": true, "-Inf B": true, "Inf": true,
		"TCP_INFO": false, "Info": false, "n/a": false} {
		if got := nonFinite.MatchString(in); got != want {
			t.Errorf("nonFinite.MatchString(%q) = %v", in, got)
		}
	}
	if refs := networkRefs(`<p>see https://example.org (text only)</p>`); len(refs) != 0 {
		t.Errorf("plain text flagged: %q", refs)
	}
}

var nonFinite = regexp.MustCompile(`NaN|[+-]?Inf\b`)

func renderHTML(t *testing.T, r *model.Result) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteHTML(&b, r); err != nil {
		t.Fatalf("WriteHTML: %v", err)
	}
	return b.String()
}

func TestWriteHTMLFull(t *testing.T) {
	r := fullResult()
	doc := renderHTML(t, r)
	checkWellFormed(t, doc)
	checkSelfContained(t, doc)
	if strings.Contains(doc, "http://") || strings.Contains(doc, "https://") {
		t.Errorf("report mentions a URL although the result holds none")
	}
	if m := nonFinite.FindString(doc); m != "" {
		t.Errorf("report contains %q", m)
	}
	// One RTT distribution chart plus goodput, RTT and cwnd per direction.
	if n := strings.Count(doc, "<svg "); n != 7 {
		t.Errorf("%d charts, want 7", n)
	}
	for _, svg := range regexp.MustCompile(`(?s)<svg .*?</svg>`).FindAllString(doc, -1) {
		checkPolylines(t, svg)
	}
	for _, want := range []string{
		`<meta name="viewport"`,
		"Goodput per flow and in total", "RTT under load (probe flow)", "Congestion window",
		"flow 4 (server)", "all flows", "idle median", "configured rate", "steady state", "BDP",
		units.FormatRate(r.Download.GoodputBps), units.FormatRate(r.Upload.GoodputBps),
		"upload adds " + FormatMs(r.Upload.Latency.RTTMs.P50-r.Baseline.RTTMs.P50) + " of queueing delay: bufferbloat",
		`class="verdict bad"`, `class="verdict ok"`,
		"needs --link-rate", "receiver window", "AF41", "changed",
		"upload queue is 22x the BDP", "configured " + FormatMs(r.Truth.BaseRTTMs),
		"sonde.result/v1",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(doc, "<script") {
		t.Errorf("report has a script; none is needed")
	}
}

func TestWriteHTMLEscapes(t *testing.T) {
	r := fullResult()
	r.Server.Address = `<script>alert("x")</script>`
	r.Notes = append(r.Notes, `<img src="https://example.com/x.png"> & more`)
	r.Download.Flows[0].Bottleneck.Verdict = `"><b>`
	r.Classes.Flows[0].Class.Name = `</td><td>EVIL`
	doc := renderHTML(t, r)
	checkWellFormed(t, doc)
	checkSelfContained(t, doc)
	for _, bad := range []string{"<script", "<img", "<b>", "</td><td>EVIL"} {
		if strings.Contains(doc, bad) {
			t.Errorf("unescaped %q in report", bad)
		}
	}
	if !strings.Contains(doc, "&lt;script&gt;") {
		t.Errorf("server address missing or escaped unexpectedly")
	}
}

// TestWriteHTMLExample renders the synthetic result to a file for viewing:
// SONDE_REPORT_EXAMPLE=/tmp/sonde-report-example.html go test -run Example.
func TestWriteHTMLExample(t *testing.T) {
	path := os.Getenv("SONDE_REPORT_EXAMPLE")
	if path == "" {
		t.Skip("set SONDE_REPORT_EXAMPLE to a file path to write an example report")
	}
	if err := os.WriteFile(path, []byte(renderHTML(t, fullResult())), 0o644); err != nil {
		t.Fatal(err)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteErrors(t *testing.T) {
	if err := WriteHTML(failWriter{}, fullResult()); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("WriteHTML error = %v, want the writer's error", err)
	}
	if err := WriteText(failWriter{}, fullResult()); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("WriteText error = %v, want the writer's error", err)
	}
}

// TestPagesParse: every report page parses, though none is parsed until
// it is first rendered (page.template), so a template error fails here
// even for a page no other test renders.
func TestPagesParse(t *testing.T) {
	for _, p := range []*page{analyzeTemplate, compareTemplate, fleetTemplate, pageTemplate, mbmTemplate,
		mbmSummaryTemplate, monitorTemplate, rpmTemplate, udpTemplate} {
		fresh := newPage(p.name, p.body)
		if fresh.t != nil {
			t.Fatalf("page %s parsed before its first use", p.name)
		}
		if fresh.template() == nil || fresh.t.Lookup("top") == nil || fresh.t.Lookup("foot") == nil {
			t.Errorf("page %s: no template, or without the shell", p.name)
		}
	}
}
