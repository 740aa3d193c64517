package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sonde-project/sonde/internal/dscp"
	"github.com/sonde-project/sonde/internal/dscpmark"
	"github.com/sonde-project/sonde/internal/httpload"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/protocol"
	"github.com/sonde-project/sonde/internal/stream"
	"github.com/sonde-project/sonde/internal/tcpinfo"
)

// recvBuf is the receive buffer of one upload stream. Small enough that 50
// concurrent tests with several streams stay far below 100 MB of RSS; the
// kernel's socket buffer, not this one, holds data in flight.
const recvBuf = 128 << 10

// countInterval is how often an upload stream's byte count is recorded.
const countInterval = 50 * time.Millisecond

func (s *Server) handleStream(w http.ResponseWriter, r *http.Request) {
	kind := r.PathValue("kind")
	if kind != protocol.KindDownload && kind != protocol.KindUpload && kind != protocol.KindProbe {
		s.writeError(w, http.StatusNotFound, "unknown stream kind "+strconv.Quote(kind))
		return
	}
	ses := s.lookup(w, r)
	if ses == nil {
		return
	}
	if ses.ctx.Err() != nil || ses.expired() {
		s.writeError(w, http.StatusGone, ses.endReason(s.cfg.MaxDuration))
		return
	}
	if kind != protocol.KindProbe && ses.budget != nil && ses.budget.Spent() {
		// Refused before the upgrade, so the client reports a refused
		// phase instead of a stream that moved nothing.
		s.writeError(w, http.StatusForbidden, byteLimitMsg(ses.maxBytes)+": no more load streams in this test")
		return
	}
	mark := -1
	if v := r.URL.Query().Get("dscp"); v != "" {
		d, err := dscp.Parse(v)
		if err != nil {
			s.writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		mark = d
	}
	ws := isWebSocket(r) // browsers: the same frames inside WebSocket messages
	if !ws && !headerHas(r.Header, "Upgrade", protocol.StreamUpgrade) {
		w.Header().Set("Upgrade", protocol.StreamUpgrade)
		s.writeError(w, http.StatusUpgradeRequired, "stream requests must upgrade to "+protocol.StreamUpgrade)
		return
	}
	lossBased := false
	switch v := r.URL.Query().Get("cc"); v {
	case "":
	case protocol.CCLossBased:
		lossBased = true
	default:
		s.writeError(w, http.StatusBadRequest, "unknown cc "+strconv.Quote(v)+": only "+protocol.CCLossBased)
		return
	}
	tag := r.URL.Query().Get("tag")
	if !validTag(tag) {
		s.writeError(w, http.StatusBadRequest, "invalid stream tag: at most 32 letters, digits, '-' or '_'")
		return
	}
	f := &flow{kind: kind, tag: tag, done: make(chan struct{})}
	if !ses.addFlow(f, s.cfg.MaxStreams) {
		s.writeError(w, http.StatusTooManyRequests, fmt.Sprintf("too many streams in one test (limit %d)", s.cfg.MaxStreams))
		return
	}
	// Counted from the request on, so that an upgrade in progress keeps
	// the session from being reclaimed as idle.
	ses.streamOpened()
	var conn *stream.BufferedConn
	var err error
	if ws {
		conn, err = upgradeWebSocket(w, r, mark)
	} else {
		conn, err = hijack(w, mark)
	}
	if err == nil && lossBased {
		httpload.LossBased(conn.Conn)
	}
	if err != nil {
		f.report = protocol.FlowReport{ID: f.id, Kind: kind, Tag: tag, Error: err.Error()}
		close(f.done)
		ses.streamClosed()
		s.metrics.errors.WithLabelValues("upgrade").Inc()
		return
	}
	go s.runFlow(ses, f, conn, mark)
}

// hijack takes over the connection, marks it with DSCP mark (≥ 0) and
// answers 101. Marking first means every data packet of the stream, the
// 101 reply included, carries the mark.
func hijack(w http.ResponseWriter, mark int) (*stream.BufferedConn, error) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		return nil, errors.New("connection cannot be upgraded (HTTP/2?)")
	}
	c, brw, err := hj.Hijack()
	if err != nil {
		return nil, fmt.Errorf("hijack: %w", err)
	}
	if mark >= 0 {
		if err := dscpmark.Conn(c, mark); err != nil {
			c.Close()
			return nil, err
		}
	}
	_ = c.SetDeadline(time.Time{})
	if _, err := brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: " +
		protocol.StreamUpgrade + "\r\n\r\n"); err != nil {
		c.Close()
		return nil, fmt.Errorf("upgrade reply: %w", err)
	}
	if err := brw.Flush(); err != nil {
		c.Close()
		return nil, fmt.Errorf("upgrade reply: %w", err)
	}
	return stream.NewBufferedConn(c, brw.Reader, brw.Reader.Buffered()), nil
}

func validTag(t string) bool {
	if len(t) > 32 {
		return false
	}
	for _, c := range t {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

func headerHas(h http.Header, key, token string) bool {
	for _, v := range h.Values(key) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// runFlow serves one stream until the client closes it or the session ends,
// then records the flow's report.
func (s *Server) runFlow(ses *session, f *flow, conn *stream.BufferedConn, mark int) {
	start := time.Now()
	rep := protocol.FlowReport{ID: f.id, Kind: f.kind, Tag: f.tag, StartS: ses.since(start)}
	defer func() {
		conn.Close()
		f.report = rep
		close(f.done)
		ses.streamClosed()
	}()
	if mark >= 0 {
		rep.DSCP = mark // set on the socket by hijack
	}
	rep.SndBufBytes, rep.RcvBufBytes, _ = tcpinfo.Buffers(conn.Conn)
	interval := ses.interval
	if f.kind == protocol.KindProbe {
		interval = max(interval, 100*time.Millisecond)
	}
	sampler, err := tcpinfo.NewSampler(conn.Conn, ses.start, interval)
	if err != nil {
		rep.Error = err.Error()
		return
	}
	rc, _ := tcpinfo.RawConn(conn.Conn)

	var (
		runErr error
		counts []model.ByteCount
		cut    bool // the byte budget ended the stream
	)
	switch f.kind {
	case protocol.KindDownload:
		snd := stream.NewSender(conn, s.payload)
		if _, ok := conn.Conn.(*wsConn); ok {
			snd.ChunkLimit = wsMaxFrame
		}
		f.start(snd.Sent, rc, ses.since)
		cut, runErr = s.serveDownload(ses, conn, snd)
		rep.Bytes = snd.Sent()
		s.metrics.bytes.WithLabelValues("download").Add(float64(rep.Bytes))
	case protocol.KindUpload:
		rcv := stream.NewReceiver(budgetConn{conn, ses.budget})
		f.start(rcv.Bytes, rc, ses.since)
		counts, runErr = s.serveUpload(ses, conn, rcv)
		if errors.Is(runErr, errByteLimit) {
			cut, runErr = true, nil
		}
		rep.Bytes = rcv.Bytes()
		rep.Counts = counts
		s.metrics.bytes.WithLabelValues("upload").Add(float64(rep.Bytes))
	case protocol.KindProbe:
		rcv := stream.NewReceiver(conn)
		f.start(rcv.Bytes, rc, ses.since)
		runErr = s.serveProbe(ses, conn, rcv)
	}
	rep.EndS = ses.since(time.Now())
	switch {
	case cut:
		rep.Limit, rep.Error = protocol.LimitBytes, byteLimitMsg(ses.maxBytes)
	case f.kind != protocol.KindProbe && ses.expired():
		rep.Limit, rep.Error = protocol.LimitDuration, "test session expired (limit "+s.cfg.MaxDuration.String()+")"
	}
	rep.TCPInfo, err = sampler.Stop()
	if runErr == nil && err != nil && !stream.PeerClosed(err) {
		runErr = err
	}
	if runErr != nil {
		rep.Error = runErr.Error()
		s.metrics.errors.WithLabelValues(f.kind).Inc()
		s.cfg.Logger.Info("stream ended with error", "session", ses.id, "flow", f.id, "kind", f.kind, "err", runErr)
	}
}

// serveDownload sends data until the client closes the stream, the session
// ends or its byte budget is spent (cut), answering probes on the loaded
// stream.
func (s *Server) serveDownload(ses *session, conn *stream.BufferedConn, snd *stream.Sender) (cut bool, err error) {
	ctx, cancel := context.WithCancel(ses.ctx)
	defer cancel()
	snd.Budget = ses.budget
	rcv := stream.NewReceiver(conn)
	rcv.OnControl = func(typ byte, p []byte, at time.Time) {
		if typ == protocol.FrameProbe {
			snd.Queue(reply(ses, p, at))
		}
	}
	var rerr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer cancel() // the client closing its side ends the phase
		rerr = rcv.Run(ctx, 4096)
	}()
	err = snd.Run(ctx)
	cut = err == nil && ses.budget != nil && ses.budget.Spent()
	cancel()
	wg.Wait()
	if err != nil && stream.PeerClosed(err) {
		err = nil
	}
	return cut, errors.Join(err, rerr)
}

// serveUpload receives data until the client closes, the session ends or
// its byte budget is spent (an error wrapping errByteLimit), recording the
// cumulative byte count over time and answering probes at once. rcv reads
// through the budget.
func (s *Server) serveUpload(ses *session, conn *stream.BufferedConn, rcv *stream.Receiver) ([]model.ByteCount, error) {
	var wmu sync.Mutex
	rcv.OnControl = func(typ byte, p []byte, at time.Time) {
		if typ == protocol.FrameProbe {
			wmu.Lock()
			_, _ = conn.Write(reply(ses, p, at))
			wmu.Unlock()
		}
	}
	counts := []model.ByteCount{{TS: ses.since(time.Now()), Bytes: 0}}
	stop := make(chan struct{})
	var cmu sync.Mutex
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(countInterval)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case now := <-t.C:
				cmu.Lock()
				counts = append(counts, model.ByteCount{TS: ses.since(now), Bytes: rcv.Bytes()})
				cmu.Unlock()
			}
		}
	}()
	err := rcv.Run(ses.ctx, recvBuf)
	close(stop)
	wg.Wait()
	counts = append(counts, model.ByteCount{TS: ses.since(time.Now()), Bytes: rcv.Bytes()})
	return counts, err
}

// serveProbe answers echo requests until the client closes the stream.
func (s *Server) serveProbe(ses *session, conn *stream.BufferedConn, rcv *stream.Receiver) error {
	rcv.OnControl = func(typ byte, p []byte, at time.Time) {
		if typ == protocol.FrameProbe {
			_, _ = conn.Write(reply(ses, p, at))
		}
	}
	return rcv.Run(ses.ctx, 4096)
}

func reply(ses *session, p []byte, at time.Time) []byte {
	pr := protocol.DecodeProbe(p)
	return protocol.AppendProbeReply(make([]byte, 0, protocol.HeaderLen+protocol.ProbeReplyLen), protocol.ProbeReply{
		Seq: pr.Seq, SentNs: pr.SentNs,
		RecvNs: at.Sub(ses.start).Nanoseconds(), SendNs: time.Since(ses.start).Nanoseconds(),
	})
}

// errByteLimit ends an upload stream whose session's byte budget is spent.
var errByteLimit = errors.New("test byte limit reached")

func byteLimitMsg(max int64) string {
	return fmt.Sprintf("test byte limit reached: this server moves at most %d bytes per test (download and upload together)", max)
}

// budgetConn charges what is read from an upload stream to the session's
// budget (frame headers included, so the payload counted stays within it)
// and fails once it is spent: the server stops accepting upload bytes, and
// the stream is closed. At most one read's worth past the budget is read
// and dropped uncounted.
type budgetConn struct {
	*stream.BufferedConn
	budget *stream.Budget // nil: unlimited
}

func (c budgetConn) Read(p []byte) (int, error) {
	if c.budget == nil {
		return c.BufferedConn.Read(p)
	}
	if c.budget.Spent() {
		return 0, errByteLimit
	}
	n, err := c.BufferedConn.Read(p)
	if g := int(c.budget.Take(int64(n))); g < n {
		return g, errByteLimit
	}
	return n, err
}
