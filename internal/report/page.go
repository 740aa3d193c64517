package report

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"sync"
)

// shellHTML is the one HTML shell of every report (test, udp, analyze,
// comparison): the page skeleton, the stylesheet, the header (title,
// subtitle, headline cards, errors) and the footer, plus the key-value
// ("rows") and grid ("grid") tables. A page's template is its body between
// {{template "top" .}} and {{template "foot" .}}; its data has the fields
// Title, Subtitle, Cards, Errors, Kind and Schema. The shell is also
// well-formed XML (void elements self-closed, no named entities) so that
// tests can check a page's structure with encoding/xml. Everything is
// inline: a report must open from a file on a machine without network.
const shellHTML = `{{define "top"}}<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8"/>
<meta name="viewport" content="width=device-width, initial-scale=1"/>
<title>{{.Title}}</title>
<style>
:root { --fg: #1d1d1f; --muted: #666; --line: #ddd; --bg: #fafafa;
  --ok: #2e7d32; --warn: #b26a00; --bad: #c62828; }
* { box-sizing: border-box; }
body { margin: 0; padding: 1rem; background: var(--bg); color: var(--fg);
  font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
main { max-width: 1180px; margin: 0 auto; }
h1 { font-size: 1.4rem; margin: 0 0 .2rem; word-break: break-word; }
h2 { font-size: 1.2rem; margin: 0 0 .6rem; border-bottom: 1px solid var(--line); padding-bottom: .3rem; }
h3 { font-size: 1rem; margin: 1.2rem 0 .4rem; }
.sub { color: var(--muted); margin: 0 0 1rem; }
section { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 1rem; margin: 0 0 1rem; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(160px, 1fr)); gap: .6rem; margin: 0 0 1rem; }
.card { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: .6rem .8rem; border-top: 4px solid #999; }
.card.ok { border-top-color: var(--ok); }
.card.warn { border-top-color: var(--warn); }
.card.bad { border-top-color: var(--bad); }
.card .label { color: var(--muted); font-size: .85rem; }
.card .value { font-size: 1.45rem; font-weight: 600; white-space: nowrap; }
.card .s { color: var(--muted); font-size: .8rem; }
table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
th, td { text-align: left; padding: .25rem .5rem .25rem 0; vertical-align: top; }
table.kv th { width: 9.5rem; color: var(--muted); font-weight: 500; }
table.kv td .note { display: block; color: var(--muted); font-size: .85rem; }
table.kv tr.ok td { color: var(--ok); }
table.kv tr.warn td { color: var(--warn); }
table.kv tr.bad td { color: var(--bad); }
table.grid { font-size: .9rem; }
table.grid th { border-bottom: 1px solid var(--line); color: var(--muted); font-weight: 500; white-space: nowrap; }
table.grid td { border-bottom: 1px solid #f0f0f0; white-space: nowrap; }
table.grid td.n, table.grid th.n { text-align: right; padding-right: .8rem; }
td.ok { color: var(--ok); } td.bad { color: var(--bad); font-weight: 600; }
.scroll { overflow-x: auto; }
.verdict { padding: .5rem .8rem; border-radius: 6px; margin: 0 0 .8rem; font-weight: 600; }
.verdict.ok { background: #e8f5e9; color: var(--ok); }
.verdict.warn { background: #fff4e0; color: var(--warn); }
.verdict.bad { background: #fdecea; color: var(--bad); }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(440px, 1fr)); gap: .8rem; margin-top: .8rem; }
figure { margin: 0; min-width: 0; }
figcaption { font-size: .9rem; color: var(--muted); margin-bottom: .2rem; }
svg.chart { width: 100%; height: auto; display: block; font-family: inherit; }
ul.list { margin: 0; padding-left: 1.2rem; }
section.errors { border-color: var(--bad); }
section.errors li { color: var(--bad); }
footer { color: var(--muted); font-size: .8rem; text-align: center; margin: 1rem 0; }
@media (max-width: 600px) {
  body { padding: .5rem; font-size: 14px; }
  section { padding: .7rem; }
  table.kv th { width: 6.5rem; }
  .charts { grid-template-columns: 1fr; }
  .card .value { font-size: 1.2rem; }
  svg.chart { font-size: 16px; }
}
</style>
</head>
<body>
<main>
<h1>{{.Title}}</h1>
{{if .Subtitle}}<p class="sub">{{.Subtitle}}</p>{{end}}
{{if .Cards}}<div class="cards">{{range .Cards}}
<div class="card {{.Level}}"><div class="label">{{.Label}}</div><div class="value">{{.Value}}</div>{{if .Sub}}<div class="s">{{.Sub}}</div>{{end}}</div>{{end}}
</div>{{end}}
{{if .Errors}}<section class="errors"><h2>Errors</h2><ul class="list">{{range .Errors}}<li>{{.}}</li>{{end}}</ul></section>{{end}}
{{end}}
{{define "foot"}}<footer>{{.Kind}}{{if .Schema}}, schema {{.Schema}}{{end}}. Rates in SI units (1 Mbit/s = 10^6 bit/s), sizes in IEC units (1 KiB = 1024 B).</footer>
</main>
</body>
</html>
{{end}}
{{define "rows"}}<table class="kv"><tbody>{{range .}}
<tr class="{{.Level}}"><th>{{.Label}}</th><td>{{.Value}}{{if .Note}}<span class="note">{{.Note}}</span>{{end}}</td></tr>{{end}}
</tbody></table>{{end}}
{{define "grid"}}<div class="scroll"><table class="grid"><thead><tr>{{range index . 0}}<th>{{.}}</th>{{end}}</tr></thead><tbody>
{{range index . 1}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</tbody></table></div>{{end}}`

// page is a report's template, parsed (its body with the shell) when the
// page is first rendered: parsed at start-up, every page's tree stayed on
// the heap of every command, 0.27 MB of the monitor daemon's, which
// renders none. The tests render each page, so a template error still
// fails them.
type page struct {
	name, body string
	once       sync.Once
	t          *template.Template
}

func newPage(name, body string) *page { return &page{name: name, body: body} }

func (p *page) template() *template.Template {
	p.once.Do(func() {
		t := template.Must(template.New(p.name).Funcs(template.FuncMap{
			"arr": func(v ...any) []any { return v }, // a table's head and rows for the "grid" template
		}).Parse(p.body))
		p.t = template.Must(t.Parse(shellHTML))
	})
	return p.t
}

// render executes a page into a buffer first, so that a template error
// writes nothing, then writes it out.
func render(w io.Writer, p *page, data any, what string) error {
	var buf bytes.Buffer
	if err := p.template().Execute(&buf, data); err != nil {
		return fmt.Errorf("report: render %s: %w", what, err)
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("report: write %s: %w", what, err)
	}
	return nil
}

// pageHTML is the body of the test result's report.
const pageHTML = `{{template "top" .}}{{if .Header}}<section><h2>Test</h2>{{template "rows" .Header}}</section>{{end}}
{{if .Grades}}<section id="grades"><h2>Grades</h2>{{template "rows" .Grades}}</section>
{{end}}{{if .Baseline}}<section id="baseline"><h2>Baseline RTT (idle)</h2>{{template "rows" .Baseline}}
{{with .CDF}}<div class="charts"><figure><figcaption>{{.Caption}}</figcaption>{{.SVG}}</figure></div>{{end}}</section>
{{else}}{{with .CDF}}<section><h2>RTT distribution</h2><div class="charts"><figure><figcaption>{{.Caption}}</figcaption>{{.SVG}}</figure></div></section>{{end}}{{end}}
{{range .Directions}}<section id="{{.Key}}"><h2>{{.Title}}</h2>
{{if .Verdict}}<p class="verdict {{.VerdictLevel}}">{{.Verdict}}</p>{{end}}
{{template "rows" .Summary}}
{{if .Charts}}<div class="charts">{{range .Charts}}<figure><figcaption>{{.Caption}}</figcaption>{{.SVG}}</figure>{{end}}</div>{{end}}
{{if .RFC}}<h3>{{.RFCTitle}}</h3>{{template "rows" .RFC}}{{end}}
{{$dscp := .FlowDSCP}}{{if .Flows}}<h3>Flows</h3><div class="scroll"><table class="grid"><thead><tr>
<th class="n">flow</th><th class="n">goodput</th><th class="n">bytes</th><th class="n">warm-up end</th><th>warm-up by</th>
<th class="n">efficiency</th><th class="n">resent</th><th class="n">rwnd-limited</th><th class="n">sndbuf-limited</th>
<th>limit</th><th class="n">window limit</th>{{if .FlowDSCP}}<th class="n">DSCP</th><th class="n">rx DSCP</th>{{end}}</tr></thead><tbody>
{{range .Flows}}<tr><td class="n">{{.ID}}</td><td class="n">{{.Goodput}}</td><td class="n">{{.Bytes}}</td><td class="n">{{.Warmup}}</td><td>{{.WarmupHow}}</td>
<td class="n">{{.Efficiency}}</td><td class="n">{{.Retrans}}</td><td class="n">{{.Rwnd}}</td><td class="n">{{.Sndbuf}}</td>
<td>{{.Verdict}}</td><td class="n">{{.MaxAchievable}}</td>{{if $dscp}}<td class="n">{{.DSCP}}</td><td class="n">{{.RxDSCP}}</td>{{end}}</tr>
{{end}}</tbody></table></div>{{end}}
</section>
{{end}}
{{if .Classes}}<section id="classes"><h2>QoS classes{{if .ClassesDur}} ({{.ClassesDur}}){{end}}</h2><div class="scroll"><table class="grid"><thead><tr>
<th>class</th><th>direction</th><th class="n">DSCP</th><th class="n">goodput</th><th class="n">RTT median</th><th class="n">RTT p90</th>
<th class="n">received DSCP</th><th>marks</th></tr></thead><tbody>
{{range .Classes}}<tr><td>{{.Name}}</td><td>{{.Direction}}</td><td class="n">{{.DSCP}}</td><td class="n">{{.Goodput}}</td>
<td class="n">{{.RTTMedian}}</td><td class="n">{{.RTTP90}}</td><td class="n">{{.RxDSCP}}</td><td class="{{.Level}}">{{.Marks}}</td></tr>
{{end}}</tbody></table></div></section>{{end}}
{{if .Notes}}<section><h2>Notes</h2><ul class="list">{{range .Notes}}<li>{{.}}</li>{{end}}</ul></section>{{end}}
{{template "foot" .}}`
