package report

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sonde-project/sonde/internal/mbm"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/units"
)

// WriteMBMPlanText writes `sonde mbm --plan`'s text: the model and the
// SPRT a run would use, nothing sent.
func WriteMBMPlanText(w io.Writer, p mbm.Plan) error {
	var b strings.Builder
	payload := p.MTU - p.HeaderOverhead
	fmt.Fprintf(&b, "MBM plan (RFC 8337): nothing sent\n")
	fmt.Fprintf(&b, "target        %s, RTT %s, MTU %d B (%d B headers, %d B payload)\n", units.FormatRate(p.RateBps), p.RTT, p.MTU, p.HeaderOverhead, payload)
	fmt.Fprintf(&b, "window W      %d packets = ceil(rate × RTT / (8 × %d))\n", p.W, payload)
	fmt.Fprintf(&b, "run length R  %.6g packets (model %s)\n", p.R, p.Model)
	for _, m := range p.Models {
		fmt.Fprintf(&b, "  %-14s %12.6g packets  %.3f × 3W²\n", m.Model, m.Packets, m.Ratio)
	}
	if p.Budget != 0 {
		fmt.Fprintf(&b, "loss budget   b = %.4g of the path's 1/R = %.4g: p0 = b\n", p.Budget, 1/p.R)
	}
	fmt.Fprintf(&b, "p0            %.4g (%.4g %%): PASS threshold\n", p.P0, 100*p.P0)
	fmt.Fprintf(&b, "p1 = 4·p0     %.4g (%.4g %%): FAIL threshold\n", p.P1, 100*p.P1)
	l := p.Lines
	fmt.Fprintf(&b, "SPRT          α %g, β %g, per packet, marks m = losses + ECN CE in n packets\n", p.Alpha, p.Beta)
	fmt.Fprintf(&b, "              k %.6g, s %.6g, h1 %.6g, h2 %.6g\n", l.K, l.S, l.H1, l.H2)
	fmt.Fprintf(&b, "              PASS if m ≤ −%.6g + %.6g·n; FAIL if m ≥ %.6g + %.6g·n\n", l.H1, l.S, l.H2, l.S)
	fmt.Fprintf(&b, "to PASS       at least %d packets, none marked (%.3f·R, %s at the target rate); Wald's average at p0: %.0f\n",
		p.CheapestPass, float64(p.CheapestPass)/p.R, p.Duration(float64(p.CheapestPass)).Round(time.Millisecond), p.ASNAtP0)
	fmt.Fprintf(&b, "to FAIL       at least %d packets, all marked; Wald's average at p1: %.0f\n", p.CheapestFail, p.ASNAtP1)
	fmt.Fprintf(&b, "truncation    %d packets (%g × the worst average %.0f, at p = s; %s): INCONCLUSIVE if undecided\n",
		p.MaxPackets, p.TruncFactor, p.MaxASN, p.Duration(float64(p.MaxPackets)).Round(time.Millisecond))
	if p.FloorPackets > 0 {
		fmt.Fprintf(&b, "floor         no FAIL before %d packets\n", p.FloorPackets)
	} else {
		b.WriteString("floor         none\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteMBMComposeText writes `sonde mbm compose`'s text: the path's
// verdict per test, and the end-to-end measurement beside it.
func WriteMBMComposeText(w io.Writer, c *model.MBMComposition) error {
	var b strings.Builder
	fmt.Fprintf(&b, "MBM composition: %d subpaths, path p0 %.4g (target %s, RTT %g ms)\n", len(c.Inputs), c.PathP0, units.FormatRate(c.Target.RateBps), c.Target.RTTMs)
	for i, in := range c.Inputs {
		fmt.Fprintf(&b, "  #%d %s\n", i+1, in)
	}
	for _, t := range c.Tests {
		fmt.Fprintf(&b, "%-8s %-12s loss %.4g (bounds %.4g to %.4g)  %s\n", t.ID, t.Verdict, t.Loss, t.LossLow, t.LossHigh, t.Reason)
		if m := t.Measured; m != nil {
			fmt.Fprintf(&b, "%-8s measured end to end: %s, loss %.4g (%d of %d packets; 95 %% %.4g to %.4g)\n", "", m.Verdict, m.Loss, m.Marks, m.Packets, m.LossLow, m.LossHigh)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteMBMComposeHTML writes the self-contained HTML report of a
// composition, on the page of a run.
func WriteMBMComposeHTML(w io.Writer, c *model.MBMComposition) error {
	p := mbmPage{Kind: "sonde mbm compose", Title: "sonde mbm compose (RFC 8337)", Schema: c.Schema, Notes: c.Notes}
	p.Subtitle = fmt.Sprintf("target %s at RTT %g ms, %d subpaths", units.FormatRate(c.Target.RateBps), c.Target.RTTMs, len(c.Inputs))
	p.Header = append(p.Header, row{Label: "path p0", Value: fmt.Sprintf("%.4g", c.PathP0)})
	for i, in := range c.Inputs {
		p.Header = append(p.Header, row{Label: fmt.Sprintf("subpath #%d", i+1), Value: in})
	}
	if c.Path != "" {
		p.Header = append(p.Header, row{Label: "end to end", Value: c.Path})
	}
	for _, x := range c.Tests {
		p.Cards = append(p.Cards, card{Label: x.ID, Value: string(x.Verdict), Sub: fmt.Sprintf("loss %.4g", x.Loss), Level: verdictLevel(x.Verdict)})
		rows := []row{
			{Label: "reason", Value: x.Reason, Level: verdictLevel(x.Verdict)},
			{Label: "loss", Value: fmt.Sprintf("%.4g (bounds %.4g to %.4g)", x.Loss, x.LossLow, x.LossHigh)},
			{Label: "budgets", Value: fmt.Sprintf("%.4g (fit the path: %t)", x.Budgets, x.BudgetsFit)},
		}
		if len(x.SubpathPackets) > 0 {
			rows = append(rows, row{Label: "packets", Value: fmt.Sprint(x.SubpathPackets)})
		}
		if m := x.Measured; m != nil {
			rows = append(rows, row{Label: "end to end", Value: fmt.Sprintf("%s, loss %.4g (%d of %d packets; 95 %% %.4g to %.4g)", m.Verdict, m.Loss, m.Marks, m.Packets, m.LossLow, m.LossHigh)})
		}
		p.Tests = append(p.Tests, mbmTestView{Title: x.ID, Verdict: string(x.Verdict), Level: verdictLevel(x.Verdict), Rows: rows})
	}
	return render(w, mbmTemplate, p, "mbm compose html")
}

// mbmComposeHeadlines are the figures a comparison of compositions
// shows: per test, the composed loss.
func mbmComposeHeadlines(c *model.MBMComposition) []headline {
	var h []headline
	for _, x := range c.Tests {
		h = append(h, headline{label: x.ID + " loss", unit: "%", v: 100 * x.Loss})
	}
	return h
}
