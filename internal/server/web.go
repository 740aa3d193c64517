package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sonde-project/sonde/internal/assemble"
	"github.com/sonde-project/sonde/internal/metrics"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/protocol"
	"github.com/sonde-project/sonde/internal/store"
	"github.com/sonde-project/sonde/web"
)

// webRoutes serves the browser test page at / and the endpoint that turns
// a browser's measurements into a model.Result.
//
// The page sends what only it saw (its receive counts, probe RTTs); the
// server joins them with its own records of the same session (TCP_INFO
// series, upload counts) and runs the same metrics code as `sonde test`, so
// page and CLI report identical figures from one implementation.
func (s *Server) webRoutes() {
	files := http.FileServerFS(web.Assets())
	// "/" without a method: a method pattern would conflict with ndt7's
	// method-less paths under Go's mux precedence rules.
	s.mux.handle("/", policyPublic, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			s.writeError(w, http.StatusMethodNotAllowed, "method not allowed")
			return
		}
		s.pageHeaders(w)
		files.ServeHTTP(w, r)
	}))
	s.mux.handleFunc("GET "+PathShared+"{id}", policyPublic, s.handleShared)
	s.mux.handleFunc("POST "+protocol.PathSessions+"/{id}/result", policySession, s.handleBrowserResult)
	s.mux.handleFunc("GET "+PathResults, policyPublic, s.handleResultList)
	s.mux.handleFunc("GET "+PathResults+"/{id}", policyPublic, s.handleResultGet)
}

// pageCSP is the pages' Content-Security-Policy: everything from this
// server, and connections to the listed servers (connect, a CSP source
// list, empty without any).
func pageCSP(connect string) string {
	csp := "default-src 'self'; img-src 'self' data: blob:; style-src 'self' 'unsafe-inline'"
	if connect != "" {
		csp += "; connect-src 'self' " + connect
	}
	return csp
}

// pageHeaders are the headers of every page the server serves.
func (s *Server) pageHeaders(w http.ResponseWriter) {
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Content-Security-Policy", s.csp)
	// Cross-origin isolation: browsers then give performance.now() its
	// fine resolution (Firefox otherwise rounds it to 1 ms, coarser
	// than a loopback or LAN round trip). Everything the page loads is
	// same-origin, so nothing breaks.
	w.Header().Set("Cross-Origin-Opener-Policy", "same-origin")
	w.Header().Set("Cross-Origin-Embedder-Policy", "require-corp")
}

// PathResults lists past results (GET, ?limit=N, newest first, summary
// rows); PathResults/{id} returns one stored result (sonde.result/v1).
const PathResults = "/sonde/v1/results"

// openHistory opens the store of past results (a SQLite path or a
// PostgreSQL URL, internal/store): in memory when url is empty.
func openHistory(url string, keep int) (store.Store, error) {
	if url == "" {
		url = store.Memory
	}
	// Bounded: a PostgreSQL host that does not answer must not hang the
	// server's start.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return store.Open(ctx, url, store.Options{Results: store.Limits{Keep: keep}})
}

func (s *Server) handleResultList(w http.ResponseWriter, r *http.Request) {
	limit := 50
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			s.writeError(w, http.StatusBadRequest, "limit must be 1-1000")
			return
		}
		limit = n
	}
	// The page's own results unless another kind is asked for.
	kind := model.KindPage
	if v := r.URL.Query().Get("kind"); v == "all" {
		kind = ""
	} else if v != "" {
		if !store.ValidKind(v) {
			s.writeError(w, http.StatusBadRequest, "kind must be all, "+strings.Join(model.ResultKinds(), ", "))
			return
		}
		kind = v
	}
	list, err := s.history.ListResultsKind(r.Context(), kind, limit)
	if err != nil {
		s.cfg.Logger.Warn("past results", "err", err)
		s.writeError(w, http.StatusInternalServerError, "past results unavailable")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"results": list})
}

func (s *Server) handleResultGet(w http.ResponseWriter, r *http.Request) {
	raw, err := s.history.GetResult(r.Context(), r.PathValue("id"))
	if err != nil {
		s.resultError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(raw)
}

// resultError answers a failed look-up of a stored result.
func (s *Server) resultError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, store.ErrBadID):
		s.writeError(w, http.StatusBadRequest, "malformed result id")
	case errors.Is(err, store.ErrNotFound):
		s.writeError(w, http.StatusNotFound, "no such result (past results keep only the most recent ones)")
	default:
		s.cfg.Logger.Warn("past result", "err", err)
		s.writeError(w, http.StatusInternalServerError, "past results unavailable")
	}
}

// BrowserRun is what the page measured. Times are seconds since the page
// sent its session request (its time zero).
type BrowserRun struct {
	Software  string    `json:"software"`
	UserAgent string    `json:"user_agent"`
	Start     time.Time `json:"start"`
	// OffsetS is the server's session start on the page's clock: half the
	// round trip of the session request.
	OffsetS   float64        `json:"offset_s"`
	Streams   string         `json:"streams"`
	DurationS float64        `json:"duration_s"`
	ProbeMs   float64        `json:"probe_interval_ms"`
	Baseline  *BrowserProbes `json:"baseline,omitempty"`
	Download  *BrowserPhase  `json:"download,omitempty"`
	Upload    *BrowserPhase  `json:"upload,omitempty"`
	// Bidir is the bidirectional phase: download and upload streams at
	// once (tags starting with protocol.TagBidir), each direction's part
	// recorded as a phase of its own with the phase's probes.
	Bidir  *BrowserBidir `json:"bidir,omitempty"`
	Errors []string      `json:"errors,omitempty"`
	Notes  []string      `json:"notes,omitempty"`
}

// BrowserBidir is the page's bidirectional phase, per direction.
type BrowserBidir struct {
	Download *BrowserPhase `json:"download,omitempty"`
	Upload   *BrowserPhase `json:"upload,omitempty"`
}

// namedPhase is one of a run's load phases with its name in errors.
type namedPhase struct {
	name string
	p    *BrowserPhase
}

// phases are a run's load phases, for the checks that treat them alike.
func (run *BrowserRun) phases() []namedPhase {
	out := []namedPhase{{"download", run.Download}, {"upload", run.Upload}}
	if b := run.Bidir; b != nil {
		out = append(out, namedPhase{"bidir.download", b.Download}, namedPhase{"bidir.upload", b.Upload})
	}
	return out
}

// BrowserProbes are the page's application echoes over a probe stream.
type BrowserProbes struct {
	Samples []model.RTTSample `json:"samples"`
	Lost    int               `json:"lost"`
}

// BrowserPhase is one load phase as the page ran it.
type BrowserPhase struct {
	Auto   bool    `json:"auto"`
	StartS float64 `json:"start_s"`
	EndS   float64 `json:"end_s"`
	// Tags name the phase's streams in the order they were opened.
	Tags []string `json:"tags"`
	// Counts are the page's cumulative receive counts per tag (download).
	Counts  map[string][]model.ByteCount `json:"counts,omitempty"`
	Latency *BrowserProbes               `json:"latency,omitempty"`
	// SelfMs are probe RTTs on the loaded streams themselves.
	SelfMs []float64 `json:"self_ms,omitempty"`
	// Foreign are the phase's responsiveness probes on new connections
	// (fetches of the ping path, timed by the browser's Resource Timing).
	Foreign *BrowserForeign `json:"foreign,omitempty"`
}

// BrowserForeign holds the page's foreign probes, one entry per probe in
// each list (TLS only over https), in ms.
type BrowserForeign struct {
	TCPMs  []float64 `json:"tcp_ms"`
	TLSMs  []float64 `json:"tls_ms,omitempty"`
	HTTPMs []float64 `json:"http_ms"`
	// Failed counts probes that got no answer or reused a connection.
	Failed int `json:"failed,omitempty"`
}

// maxBrowserRun bounds the request body: a 60 s phase of 50 ms counts for
// 63 streams, 20 ms probes and 100 ms self probes on every stream is about
// 3 MiB of JSON.
const maxBrowserRun = 8 << 20

func (s *Server) handleBrowserResult(w http.ResponseWriter, r *http.Request) {
	ses := s.lookup(w, r)
	if ses == nil {
		return
	}
	var run BrowserRun
	if !s.decodeBody(w, r, maxBrowserRun, "browser result", &run) {
		return
	}
	// Every size, count and span the page sends is checked before any of
	// it is resampled, summed or stored.
	if err := s.browserLimits(ses).check(&run); err != nil {
		s.writeError(w, http.StatusBadRequest, "invalid browser result: "+err.Error())
		return
	}
	reps, ok := waitFlows(r, ses, 3*time.Second)
	if !ok {
		return
	}
	res := s.assembleBrowser(ses, &run, reps, r)
	// A store failure must not cost the page its report: logged and
	// counted only.
	s.archive.page(r.Context(), res)
	writeJSON(w, http.StatusOK, res)
}

// Bounds of a BrowserRun (docs/browser.md, "Limits"). The page's own rates
// are 5× below the per-kind sample bounds, so a busy page never meets them.
const (
	// browserSlack is how far past the session's end a page's time may
	// lie: a browser still working through queued messages stamps them
	// late (Firefox by seconds).
	browserSlack = 30.0
	// rttTolerance is how far below zero a probe's RTT may be: the page
	// subtracts the server's processing time, read on another clock.
	rttTolerance = 1.0
	// maxCountBytes bounds a receive count: 1 PiB, beyond any test, and
	// exact in a float64.
	maxCountBytes = 1 << 50
	maxText       = 2048 // bytes of one string: software, user agent, an error or note
	maxLines      = 256  // errors, and notes
	// Shortest intervals between samples of one series (the page's: counts
	// 50 ms, probes 20 ms, self probes 100 ms per stream, foreign 250 ms).
	pageCountEvery   = 0.01
	pageProbeEvery   = 0.004
	pageSelfEvery    = 0.02
	pageForeignEvery = 0.05
)

// browserLimits bound what a page may send for one session.
type browserLimits struct {
	maxT       float64 // latest time on the page's clock, s
	maxStreams int
}

// browserLimits derives a session's bounds: times within its lifetime plus
// browserSlack, streams within the server's limit.
func (s *Server) browserLimits(ses *session) browserLimits {
	return browserLimits{maxT: ses.expires.Sub(ses.start).Seconds() + browserSlack, maxStreams: s.cfg.MaxStreams}
}

// samples is how many samples one series may hold at one per every s.
func (l browserLimits) samples(every float64) int { return int(l.maxT/every) + 16 }

// check refuses a run that no page could have measured in the session:
// a time outside it, more samples than its rates allow, a value that is
// not a finite number in range, too many or unknown streams, overlong
// text. What it lets through is bounded in size, so every allocation made
// from it (resampling, summing, the stored result) is too.
func (l browserLimits) check(run *BrowserRun) error {
	maxMs := 1000 * l.maxT
	for _, t := range []struct {
		name, v string
	}{{"software", run.Software}, {"user_agent", run.UserAgent}, {"streams", run.Streams}} {
		if len(t.v) > maxText {
			return fmt.Errorf("%s: longer than %d bytes", t.name, maxText)
		}
	}
	if err := checkLines("errors", run.Errors); err != nil {
		return err
	}
	if err := checkLines("notes", run.Notes); err != nil {
		return err
	}
	if err := inRange("offset_s", run.OffsetS, 0, l.maxT); err != nil {
		return err
	}
	if err := inRange("duration_s", run.DurationS, 0, l.maxT); err != nil {
		return err
	}
	if err := inRange("probe_interval_ms", run.ProbeMs, 0, maxMs); err != nil {
		return err
	}
	if err := l.checkProbes("baseline", run.Baseline); err != nil {
		return err
	}
	for _, ph := range run.phases() {
		if err := l.checkPhase(ph.name, ph.p); err != nil {
			return err
		}
	}
	return nil
}

func (l browserLimits) checkPhase(name string, p *BrowserPhase) error {
	if p == nil {
		return nil
	}
	if err := inRange(name+".start_s", p.StartS, 0, l.maxT); err != nil {
		return err
	}
	if err := inRange(name+".end_s", p.EndS, p.StartS, l.maxT); err != nil {
		return err
	}
	if len(p.Tags) > l.maxStreams {
		return fmt.Errorf("%s.tags: %d streams, at most %d allowed", name, len(p.Tags), l.maxStreams)
	}
	tags := make(map[string]bool, len(p.Tags))
	for _, t := range p.Tags {
		if t == "" || !validTag(t) || tags[t] {
			return fmt.Errorf("%s.tags: %.40q is empty, malformed or repeated", name, t)
		}
		tags[t] = true
	}
	for tag, c := range p.Counts {
		if !tags[tag] {
			return fmt.Errorf("%s.counts: %.40q is not among the phase's tags", name, tag)
		}
		if err := l.checkCounts(name+".counts."+tag, c); err != nil {
			return err
		}
	}
	if err := l.checkProbes(name+".latency", p.Latency); err != nil {
		return err
	}
	if err := l.checkMs(name+".self_ms", p.SelfMs, max(len(p.Tags), 1)*l.samples(pageSelfEvery)); err != nil {
		return err
	}
	if f := p.Foreign; f != nil {
		n := l.samples(pageForeignEvery)
		for _, m := range []struct {
			name string
			v    []float64
		}{{"tcp_ms", f.TCPMs}, {"tls_ms", f.TLSMs}, {"http_ms", f.HTTPMs}} {
			if err := l.checkMs(name+".foreign."+m.name, m.v, n); err != nil {
				return err
			}
		}
		if f.Failed < 0 || f.Failed > n {
			return fmt.Errorf("%s.foreign.failed: %d is not 0–%d", name, f.Failed, n)
		}
	}
	return nil
}

// checkCounts: a cumulative series in time order within the session.
func (l browserLimits) checkCounts(name string, c []model.ByteCount) error {
	if n := l.samples(pageCountEvery); len(c) > n {
		return fmt.Errorf("%s: %d counts, at most %d in this session", name, len(c), n)
	}
	for i, x := range c {
		if err := inRange(name+".t_s", x.TS, 0, l.maxT); err != nil {
			return err
		}
		if i > 0 && x.TS < c[i-1].TS {
			return fmt.Errorf("%s: counts are not in time order", name)
		}
		if x.Bytes < 0 || x.Bytes > maxCountBytes {
			return fmt.Errorf("%s.bytes: %d is not 0–%d", name, x.Bytes, int64(maxCountBytes))
		}
	}
	return nil
}

func (l browserLimits) checkProbes(name string, p *BrowserProbes) error {
	if p == nil {
		return nil
	}
	n := l.samples(pageProbeEvery)
	if len(p.Samples) > n {
		return fmt.Errorf("%s: %d probes, at most %d in this session", name, len(p.Samples), n)
	}
	if p.Lost < 0 || p.Lost > n {
		return fmt.Errorf("%s.lost: %d is not 0–%d", name, p.Lost, n)
	}
	for _, x := range p.Samples {
		if err := inRange(name+".t_s", x.TS, 0, l.maxT); err != nil {
			return err
		}
		if err := inRange(name+".rtt_ms", x.RTTMs, -rttTolerance, 1000*l.maxT); err != nil {
			return err
		}
		if err := inRange(name+".server_ms", x.ServerMs, 0, 1000*l.maxT); err != nil {
			return err
		}
	}
	return nil
}

// checkMs: at most n durations, each within the session.
func (l browserLimits) checkMs(name string, v []float64, n int) error {
	if len(v) > n {
		return fmt.Errorf("%s: %d values, at most %d in this session", name, len(v), n)
	}
	for _, x := range v {
		if err := inRange(name, x, 0, 1000*l.maxT); err != nil {
			return err
		}
	}
	return nil
}

func checkLines(name string, v []string) error {
	if len(v) > maxLines {
		return fmt.Errorf("%s: %d lines, at most %d allowed", name, len(v), maxLines)
	}
	for _, x := range v {
		if len(x) > maxText {
			return fmt.Errorf("%s: a line longer than %d bytes", name, maxText)
		}
	}
	return nil
}

// inRange: v is a finite number in [lo, hi], as finiteIn checks it, or
// an error naming the field.
func inRange(name string, v, lo, hi float64) error {
	if !finiteIn(v, lo, hi) {
		return fmt.Errorf("%s: %g is not within %g–%g", name, v, lo, hi)
	}
	return nil
}

// waitFlows returns every flow's report, waiting up to wait in all for
// streams the page has just closed; false if the request went away.
func waitFlows(r *http.Request, ses *session, wait time.Duration) ([]protocol.FlowReport, bool) {
	t := time.NewTimer(wait)
	defer t.Stop()
	var out []protocol.FlowReport
	for _, f := range ses.flowList() {
		select {
		case <-f.done:
			out = append(out, f.report)
		case <-t.C:
			out = append(out, protocol.FlowReport{ID: f.id, Kind: f.kind, Tag: f.tag, Error: "still running"})
		case <-r.Context().Done():
			return nil, false
		}
	}
	return out, true
}

func (s *Server) assembleBrowser(ses *session, run *BrowserRun, reps []protocol.FlowReport, r *http.Request) *model.Result {
	host, _ := os.Hostname()
	res := &model.Result{
		Schema: model.SchemaVersion, ID: ses.id, Start: run.Start, End: time.Now().UTC(),
		Client: model.Endpoint{Address: clientIP(r), Software: run.Software},
		Server: model.Endpoint{Software: s.cfg.Software, Hostname: host},
		Config: model.TestConfig{Server: r.Host, TLS: r.TLS != nil, Streams: run.Streams,
			DurationS: run.DurationS, ProbeMs: run.ProbeMs},
		Errors: run.Errors, Notes: run.Notes,
	}
	if res.Start.IsZero() {
		res.Start = ses.start.UTC()
	}
	res.WebRTC = s.rtc.Result(ses.id)
	if run.UserAgent != "" {
		res.Notes = append(res.Notes, "browser: "+run.UserAgent)
	}
	if run.Baseline != nil {
		res.Baseline = assemble.RTT(run.Baseline.Samples, run.Baseline.Lost)
		assemble.ServerBaseline(res.Baseline, reps)
	}
	if bp := run.Download; bp != nil {
		res.Download = assemble.Direction(browserPhase(protocol.KindDownload, bp, reps, run.OffsetS, res.Baseline))
		res.Notes = appendNote(res.Notes, browserQueueNote(res.Download))
		res.Notes = appendNote(res.Notes, foreignNote(protocol.KindDownload, bp.Foreign))
	}
	if bp := run.Upload; bp != nil {
		res.Upload = assemble.Direction(browserPhase(protocol.KindUpload, bp, reps, run.OffsetS, res.Baseline))
		res.Notes = append(res.Notes, "upload: a browser cannot read its socket's TCP_INFO, so the upload's sender figures (efficiency, bottleneck, window) are not available; its goodput is the server's receive count")
		res.Notes = appendNote(res.Notes, foreignNote(protocol.KindUpload, bp.Foreign))
	}
	if b := run.Bidir; b != nil {
		var parts [2]*assemble.Phase
		for i, x := range []struct {
			kind string
			bp   *BrowserPhase
		}{{protocol.KindDownload, b.Download}, {protocol.KindUpload, b.Upload}} {
			if x.bp != nil {
				p := browserPhase(x.kind, x.bp, reps, run.OffsetS, res.Baseline)
				parts[i] = &p
			}
		}
		res.Bidir = assemble.Bidir(parts[0], parts[1])
	}
	errs, notes := streamErrors(run, reps)
	res.Errors = append(res.Errors, errs...)
	res.Notes = append(res.Notes, notes...)
	assemble.Finish(res)
	return res
}

// streamErrors turns the server's stream failures into the result's errors.
// A stream the page gave up on while it opened (it says so in a note) is
// not among its phase's tags: what the server saw of its end is a note
// too, not a failure of the run.
func streamErrors(run *BrowserRun, reps []protocol.FlowReport) (errs, notes []string) {
	counted := map[string]bool{}
	for _, ph := range run.phases() {
		if bp := ph.p; bp != nil {
			for _, tag := range bp.Tags {
				counted[tag] = true
			}
		}
	}
	for _, f := range reps {
		if f.Error == "" || f.Error == "still running" {
			continue
		}
		msg := fmt.Sprintf("server: %s stream %q: %s", f.Kind, f.Tag, f.Error)
		if (f.Kind == protocol.KindDownload || f.Kind == protocol.KindUpload) && !counted[f.Tag] {
			notes = append(notes, msg+" (a stream the page gave up on; not counted)")
			continue
		}
		errs = append(errs, msg)
	}
	return errs, notes
}

// browserPhase gathers what the page recorded of a load phase and what the
// server recorded of the same streams (reps), whose times off shifts onto
// the page's clock: the receiver's counts are the page's for download and
// the server's for upload; the sender's TCP_INFO is the server's for
// download, and for upload a browser cannot read it. The page has no link
// rate to give RFC 6349.
func browserPhase(dir string, bp *BrowserPhase, reps []protocol.FlowReport, off float64, baseline *model.RTTResult) assemble.Phase {
	p := assemble.Phase{Direction: dir, Auto: bp.Auto, StartS: bp.StartS, EndS: bp.EndS,
		Flows: make([]assemble.Flow, 0, len(bp.Tags)), SelfMs: bp.SelfMs, Baseline: baseline}
	if bp.Latency != nil {
		p.Latency = assemble.RTT(bp.Latency.Samples, bp.Latency.Lost)
	}
	if f := bp.Foreign; f != nil {
		p.Foreign = assemble.Foreign{TCPMs: f.TCPMs, TLSMs: f.TLSMs, HTTPMs: f.HTTPMs}
	}
	byTag := map[string]protocol.FlowReport{}
	for _, f := range reps {
		if f.Kind == dir {
			byTag[f.Tag] = f
		}
	}
	for _, tag := range bp.Tags {
		srv := byTag[tag]
		f := assemble.Flow{DSCP: srv.DSCP, StartS: srv.StartS + off, EndS: srv.EndS + off}
		if dir == protocol.KindDownload {
			f.Counts, f.TCPInfo, f.SndBufBytes = bp.Counts[tag], shiftTCP(srv.TCPInfo, off), srv.SndBufBytes
		} else {
			f.Counts, f.RcvBufBytes = shiftCounts(srv.Counts, off), srv.RcvBufBytes
		}
		p.Flows = append(p.Flows, f)
	}
	return p
}

// foreignNote says how many of a phase's foreign probes the page could not
// time, when any.
func foreignNote(kind string, f *BrowserForeign) string {
	if f == nil {
		return ""
	}
	return assemble.ForeignNote(kind, f.Failed, len(f.TCPMs))
}

// appendNote appends a note that is not empty.
func appendNote(notes []string, n string) []string {
	if n == "" {
		return notes
	}
	return append(notes, n)
}

// browserQueueNote says when the page's RTT under load during download is
// far above the server's TCP RTT on the same streams. Both include the
// path's queues; only the page's includes the receiving browser's own
// queue of messages it has not processed yet (Firefox reads a WebSocket
// without back-pressure), so a large gap is delay inside the browser, not
// on the network, and the figure must not be read as bufferbloat.
func browserQueueNote(d *model.DirectionResult) string {
	if d == nil || d.Latency == nil || d.Latency.RTTMs.N == 0 {
		return ""
	}
	var srv []float64
	for _, f := range d.Flows {
		for _, s := range f.TCPInfo {
			if s.RTTUs > 0 {
				srv = append(srv, float64(s.RTTUs)/1000)
			}
		}
	}
	if len(srv) == 0 {
		return ""
	}
	page, tcp := d.Latency.RTTMs.P50, metrics.Summarize(srv).P50
	if page <= 2*tcp+20 {
		return ""
	}
	return fmt.Sprintf("download: the page's RTT under load (median %.0f ms) is far above the server's TCP RTT on the loaded streams (median %.1f ms): the difference is delay inside the browser, which received data faster than it processed it, not queueing on the network", page, tcp)
}

func shiftTCP(in []model.TCPSample, off float64) []model.TCPSample {
	out := make([]model.TCPSample, len(in))
	for i, s := range in {
		s.TS += off
		out[i] = s
	}
	return out
}

func shiftCounts(in []model.ByteCount, off float64) []model.ByteCount {
	out := make([]model.ByteCount, len(in))
	for i, c := range in {
		out[i] = model.ByteCount{TS: c.TS + off, Bytes: c.Bytes}
	}
	return out
}
