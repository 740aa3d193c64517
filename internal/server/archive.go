package server

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sonde-project/sonde/internal/assemble"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/ndt7"
	"github.com/sonde-project/sonde/internal/protocol"
	"github.com/sonde-project/sonde/internal/stamp"
	"github.com/sonde-project/sonde/internal/store"
)

// Bounds of the archive's writes.
const (
	// maxArchiveWrites bounds the records being built and written at once;
	// a record that finds no room is dropped and counted, so a slow store
	// holds no more than this many goroutines and records in memory.
	maxArchiveWrites = 16
	// archiveTimeout bounds one record's write to the store.
	archiveTimeout = 30 * time.Second
	// pageTimeout bounds the page's result write, which its reply waits
	// for: a store that hangs must not cost the page its report.
	pageTimeout = 5 * time.Second
	// closeGrace is how long a closing server waits for the writes in
	// flight before it cancels them.
	closeGrace = 5 * time.Second
	// flowWait bounds how long a finished session's record waits for its
	// streams' reports (they end with the session, at once).
	flowWait = 5 * time.Second
	// maxClientText bounds what a client names itself in a record.
	maxClientText = 256
)

// archive keeps the server's own record of every test it serves (a sonde
// session, an ndt7 test, a STAMP session, an MBM run) in the server's
// store, beside the page's results (docs/store.md). Records are built and
// written off the test's path: a store that fails or is slow never fails
// or delays a test; it is logged and counted on /metrics.
type archive struct {
	st       store.Results
	log      *slog.Logger
	off      bool
	server   model.Endpoint
	stored   *prometheus.CounterVec
	failed   *prometheus.CounterVec
	slots    chan struct{}
	ctx      context.Context // cancelled when close gives up waiting
	cancel   context.CancelFunc
	mu       sync.Mutex
	closed   bool
	inflight sync.WaitGroup
}

func newArchive(st store.Results, reg *prometheus.Registry, cfg *Config) *archive {
	host, _ := os.Hostname()
	a := &archive{
		st: st, log: cfg.Logger, off: cfg.NoServerRecords,
		server: model.Endpoint{Software: cfg.Software, Hostname: host},
		stored: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sonde_results_stored_total", Help: "Results written to the store, by kind (page, tcp, ndt7, udp, mbm).",
		}, []string{"kind"}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sonde_store_errors_total",
			Help: "Results not stored, by kind: the store failed, or too many writes were pending (the test itself was unaffected).",
		}, []string{"kind"}),
		slots: make(chan struct{}, maxArchiveWrites),
	}
	a.ctx, a.cancel = context.WithCancel(context.Background())
	reg.MustRegister(a.stored, a.failed)
	return a
}

// close waits for the writes in flight, for closeGrace at most before it
// cancels them; later records are dropped.
func (a *archive) close() {
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
	done := make(chan struct{})
	go func() {
		a.inflight.Wait()
		close(done)
	}()
	t := time.NewTimer(closeGrace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		a.log.Warn("closing: cancelling the result writes still pending")
		a.cancel()
		<-done
	}
	a.cancel()
}

// save builds a record with build, off the caller's goroutine, and
// writes it. build fills the measured parts and the test's identity;
// save adds the record's ID and the server.
func (a *archive) save(kind string, build func() *model.ServerRecord) {
	if a.off {
		return
	}
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return
	}
	select {
	case a.slots <- struct{}{}:
	default:
		a.mu.Unlock()
		a.failed.WithLabelValues(kind).Inc()
		a.log.Warn("result not stored: too many store writes pending", "kind", kind, "limit", maxArchiveWrites)
		return
	}
	a.inflight.Add(1)
	a.mu.Unlock()
	go func() {
		defer func() {
			<-a.slots
			a.inflight.Done()
		}()
		rec := build()
		rec.Schema, rec.ID, rec.Kind, rec.Server = model.ServerRecordSchemaVersion, newID(), kind, a.server
		ctx, cancel := context.WithTimeout(a.ctx, archiveTimeout)
		defer cancel()
		a.done(kind, rec.Session, a.st.AddRecord(ctx, rec))
	}()
}

// done counts a write and logs a failure.
func (a *archive) done(kind, session string, err error) {
	if err != nil {
		a.failed.WithLabelValues(kind).Inc()
		a.log.Warn("result not stored", "kind", kind, "session", session, "err", err)
		return
	}
	a.stored.WithLabelValues(kind).Inc()
}

// page stores the page's assembled result, on the caller's goroutine (the
// page's request, whose reply does not wait on it for anything else).
func (a *archive) page(ctx context.Context, res *model.Result) {
	// Stored even when the page goes away before the reply.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pageTimeout)
	defer cancel()
	a.done(model.KindPage, res.ID, a.st.AddResult(ctx, res))
}

// tcpSession records a sonde test session that has ended: its streams'
// reports as the server recorded them, once they are all in.
func (a *archive) tcpSession(ses *session, maxDuration time.Duration) {
	end := time.Now()
	a.save(model.KindTCP, func() *model.ServerRecord {
		rec := assemble.ServerSession(ses.finalReports(flowWait))
		rec.Session, rec.Start, rec.End = ses.id, ses.start.UTC(), end.UTC()
		rec.Client = model.Endpoint{Address: ses.client, Software: clip(ses.software)}
		rec.Ended = ses.endReason(maxDuration)
		return rec
	})
}

// finalReports returns every flow's report, waiting up to wait in all for
// flows still finishing.
func (s *session) finalReports(wait time.Duration) []protocol.FlowReport {
	t := time.NewTimer(wait)
	defer t.Stop()
	var out []protocol.FlowReport
	for _, f := range s.flowList() {
		select {
		case <-f.done:
			out = append(out, f.report)
		case <-t.C:
			out = append(out, protocol.FlowReport{ID: f.id, Kind: f.kind, Tag: f.tag, Error: "still running when the session's record was made"})
		}
	}
	return out
}

// ndt7Test records an ndt7 test that has ended.
func (a *archive) ndt7Test(r *http.Request, res ndt7.Result) {
	client := model.Endpoint{Address: clientIP(r), Software: clip(r.URL.Query().Get("client_name"))}
	if v := r.URL.Query().Get("client_version"); v != "" && client.Software != "" {
		client.Software = clip(client.Software + "/" + v)
	}
	if client.Software == "" {
		client.Software = clip(r.UserAgent())
	}
	a.save(model.KindNDT7, func() *model.ServerRecord {
		rec := assemble.ServerNDT7(string(res.Kind), res.Counts, res.TCPInfo)
		rec.Session, rec.Start, rec.End, rec.Client = res.UUID, res.Start.UTC(), res.End.UTC(), client
		if res.Err != nil {
			rec.Errors = append(rec.Errors, res.Err.Error())
		}
		if len(res.Counts) > 0 {
			rec.Notes = append(rec.Notes, "ndt7: measurements at the server's intervals (25–625 ms, exponential), as it sent them to the client")
		}
		return rec
	})
}

// udpInfo is what the server granted a STAMP session, for its record.
type udpInfo struct {
	start       time.Time
	req         stamp.SessionRequest
	grant       time.Duration
	client      string
	testSession string
	monitor     bool
}

// udpSession records a STAMP test session that has ended. Monitor
// sessions are not recorded: they are renewed every few minutes for as
// long as a monitor runs, and the monitor keeps its own samples.
func (a *archive) udpSession(id string, info udpInfo, rep stamp.SessionReport, why string) {
	if info.monitor {
		return
	}
	end := time.Now()
	a.save(model.KindUDP, func() *model.ServerRecord {
		u := assemble.ServerUDP(rep)
		u.IntervalUs, u.PacketBytes, u.DSCP, u.ECN = info.req.IntervalUs, info.req.PacketBytes, info.req.DSCP, info.req.ECN
		u.GrantedS = info.grant.Seconds()
		return &model.ServerRecord{
			Session: id, TestSession: info.testSession, Start: info.start.UTC(), End: end.UTC(),
			Client: model.Endpoint{Address: info.client, Software: clip(info.req.Client)},
			UDP:    u, Ended: why,
		}
	})
}

// RecordMBM keeps a finished Model Based Metrics run the server took part
// in: the hook of the server's MBM sessions. The record takes res as it
// is: the caller does not change it afterwards.
func (s *Server) RecordMBM(client model.Endpoint, res *model.MBMResult) {
	if res == nil {
		return
	}
	client.Software = clip(client.Software)
	s.archive.save(model.KindMBM, func() *model.ServerRecord {
		return &model.ServerRecord{Session: res.ID, Start: res.Start.UTC(), End: res.End.UTC(), Client: client, MBM: res}
	})
}

// clip bounds a client-supplied name.
func clip(s string) string {
	if len(s) > maxClientText {
		return s[:maxClientText]
	}
	return s
}
