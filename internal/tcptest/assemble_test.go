package tcptest

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/apiclient"
	"github.com/sonde-project/sonde/internal/assemble"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/protocol"
	"github.com/sonde-project/sonde/internal/server"
	"github.com/sonde-project/sonde/internal/stream"
)

// The page and the CLI give the same result for the same measurements. One
// real session on loopback runs a baseline and a download and an upload
// phase with the CLI's code; then what was measured goes two ways: through
// the CLI's assembly (tester.phase, assemble.Direction) and, as a browser
// would send it, in a POST to the server's result endpoint for the same
// session, which joins it with its own records. Both results must agree to
// the last bit, except for what a browser cannot read: the upload sender's
// TCP_INFO and socket buffer, the download receiver's socket buffer, and
// its own probe socket's TCP_INFO; those are removed from the CLI's inputs.
func TestPageAndCLIAssembleAlike(t *testing.T) {
	addr := startServer(t, server.Config{PerIPPerMinute: -1})
	cfg := Config{Server: addr, Duration: time.Second, Streams: 2, DSCP: -1, NoUDP: true}
	cfg.setDefaults()
	base, err := protocol.ParseServer(cfg.Server)
	if err != nil {
		t.Fatal(err)
	}
	api, err := apiclient.New(cfg.Server, "", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	tr := &tester{cfg: cfg, ep: &endpoint{api: api, base: base}}
	if tr.payload, err = stream.NewPayload(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := tr.open(ctx); err != nil {
		t.Fatal(err)
	}
	defer tr.close()
	probeConn, err := tr.ep.openStream(ctx, tr.session.ID, protocol.KindProbe, flowSpec{tag: "probe", mark: -1})
	if err != nil {
		t.Fatal(err)
	}
	tr.probe = newProber(probeConn, tr.t0)
	res := &model.Result{}
	if err := tr.baseline(ctx, res); err != nil {
		t.Fatal(err)
	}
	dirs := []string{protocol.KindDownload, protocol.KindUpload}
	prs := map[string]*phaseResult{}
	for _, dir := range dirs {
		specs := []flowSpec{{tag: dir + "-0", mark: -1}, {tag: dir + "-1", mark: -1}}
		pr, err := tr.loadPhase(ctx, dir, specs, false)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		prs[dir] = pr
	}
	tr.probe.close()
	rep, err := tr.report(ctx, true)
	if err != nil {
		t.Fatal(err)
	}

	// The CLI's way.
	assemble.ServerBaseline(res.Baseline, rep.Flows)
	cli := map[string]*model.DirectionResult{}
	run := server.BrowserRun{OffsetS: tr.serverShift, Streams: "2", DurationS: 1,
		Baseline: &server.BrowserProbes{Samples: res.Baseline.Samples, Lost: res.Baseline.Lost}}
	for _, dir := range dirs {
		pr := prs[dir]
		p := tr.phase(pr, rep, res.Baseline)
		p.Latency.ClientMinRTTMs, p.Latency.ClientRTTMs = 0, 0
		for i := range p.Flows {
			if dir == protocol.KindUpload {
				p.Flows[i].TCPInfo, p.Flows[i].SndBufBytes = nil, 0
			} else {
				p.Flows[i].RcvBufBytes = 0
			}
		}
		cli[dir] = assemble.Direction(p)

		// The page's way: what it would have measured, from the CLI's
		// own records.
		bp := &server.BrowserPhase{StartS: tr.since(pr.start), EndS: tr.since(pr.end),
			Latency: &server.BrowserProbes{Samples: p.Latency.Samples, Lost: p.Latency.Lost},
			Foreign: &server.BrowserForeign{}}
		if dir == protocol.KindDownload {
			bp.Counts = map[string][]model.ByteCount{}
		}
		for _, lf := range pr.flows {
			bp.Tags = append(bp.Tags, lf.spec.tag)
			if bp.Counts != nil {
				bp.Counts[lf.spec.tag] = lf.counts
			}
			bp.SelfMs = append(bp.SelfMs, lf.selfRTT...)
		}
		for _, f := range pr.foreign {
			bp.Foreign.TCPMs = append(bp.Foreign.TCPMs, ms(f.tcp))
			bp.Foreign.HTTPMs = append(bp.Foreign.HTTPMs, ms(f.http))
		}
		if dir == protocol.KindDownload {
			run.Download = bp
		} else {
			run.Upload = bp
		}
	}
	var page model.Result
	if err := api.Call(ctx, http.MethodPost, protocol.PathSessions+"/"+tr.session.ID+"/result", run, &page); err != nil {
		t.Fatal(err)
	}

	for _, dir := range dirs {
		got := map[string]*model.DirectionResult{protocol.KindDownload: page.Download, protocol.KindUpload: page.Upload}[dir]
		want := cli[dir]
		if got == nil {
			t.Fatalf("%s: the page's result has none", dir)
		}
		// Figures that would be equal because both are empty prove
		// nothing: the phase must have moved data and been probed.
		if want.GoodputBps <= 0 || len(want.Flows) != 2 || want.Latency.RTTMs.N == 0 || want.RPM == nil || want.RFC6349.GoodputBps <= 0 {
			t.Fatalf("%s: the CLI's result is empty: %+v", dir, want)
		}
		if dir == protocol.KindDownload && (len(want.Flows[0].TCPInfo) == 0 || want.RFC6349.EfficiencyPct <= 0) {
			t.Fatalf("download: no sender TCP_INFO in the CLI's result: %+v", want.RFC6349)
		}
		g, w := mustJSON(t, got), mustJSON(t, want)
		if g != w {
			t.Errorf("%s: page and CLI differ\npage: %s\ncli:  %s", dir, g, w)
		}
	}
	if b := page.Baseline; b == nil || b.RTTMs != res.Baseline.RTTMs || b.ServerMinRTTMs != res.Baseline.ServerMinRTTMs ||
		b.ServerRTTMs != res.Baseline.ServerRTTMs || b.ServerMinRTTMs <= 0 {
		t.Errorf("baseline: page %+v, cli %+v", page.Baseline, res.Baseline)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
