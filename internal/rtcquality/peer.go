package rtcquality

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/sonde-project/sonde/internal/model"
)

// The page opens two data channels: "ctl" (reliable, ordered: the JSON
// control messages below) and "data" (unordered, maxRetransmits 0: the test
// messages).
const (
	labelCtl  = "ctl"
	labelData = "data"
)

// ctlMsg is one control message. The page sends start/end for upload and
// start for download; the server answers ready, done (with the upload's
// result) and end (download finished), or error.
type ctlMsg struct {
	Op        string  `json:"op"`
	Dir       string  `json:"dir,omitempty"`
	DurationS float64 `json:"duration_s,omitempty"`
	Size      int     `json:"size,omitempty"`
	Sent      *int    `json:"sent,omitempty"`
	SendS     float64 `json:"send_s,omitempty"`
	// Datagrams is, in the page's "end" of the upload, the datagrams its
	// ICE candidate pair sent while it sent the test messages.
	Datagrams *int                   `json:"datagrams,omitempty"`
	Result    *model.WebRTCDirection `json:"result,omitempty"`
	Error     string                 `json:"error,omitempty"`
}

// Sending keeps between sendLow and sendHigh bytes queued in the data
// channel: the buffered-amount-low event refills it, so SCTP's congestion
// control, not a timer, sets the pace.
const (
	sendHigh = 1 << 20
	sendLow  = 256 << 10
	// uploadGrace is how long the server still counts arrivals after the
	// page said it finished sending.
	uploadGrace = 500 * time.Millisecond
	// drainWait bounds the wait for the server's queue to empty before it
	// says the download ended.
	drainWait = 2 * time.Second
	// The receiver of a direction acknowledges every ackEvery-th arrival,
	// and the first after a pause of ackPause (the sender's probe after a
	// stall).
	ackEvery = 8
	ackPause = 5 * time.Millisecond
	// ackStall is how long a full window waits for an acknowledgement
	// before it sends one more message.
	ackStall = 250 * time.Millisecond
)

// peer is one session's peer connection and its test state.
type peer struct {
	svc    *Service
	id     string
	pc     *webrtc.PeerConnection
	epoch  time.Time
	ctx    context.Context
	cancel context.CancelFunc

	mu          sync.Mutex
	ctl, data   *webrtc.DataChannel
	phase       byte // phaseUp while counting upload arrivals, else 0
	up          []Record
	upNext      int64 // one more than the highest upload seq received
	upCount     int
	upLastAck   time.Time
	upMalformed int
	upTimer     *time.Timer
	upDone      bool
	upRecv0     int  // the pair's received datagrams when the upload started
	upRecvOK    bool // upRecv0 was read
	drops       *stackDrops
	upDrops0    [2]int // drops (ICE, DTLS) when the upload started
	upDrops     [2]int // drops (ICE, DTLS) during the upload
	downSent0   int    // the pair's sent datagrams when the download started
	downSentOK  bool
	down        *downState // set when the download sending finished
	ackNext     int64      // download: one more than the highest seq the page acknowledged
	win         *window    // download: how far beyond ackNext it may send
	downStart   time.Time
	ack         chan struct{} // signalled when ackNext advances
	res         model.WebRTCResult
}

type downState struct {
	sent  int
	size  int
	sendS float64
	have  bool // records received
}

func newPeer(s *Service, id string, pc *webrtc.PeerConnection, ctx context.Context, cancel context.CancelFunc) *peer {
	p := &peer{svc: s, id: id, pc: pc, epoch: time.Now(), ctx: ctx, cancel: cancel}
	context.AfterFunc(ctx, func() { _ = pc.Close() })
	pc.OnConnectionStateChange(func(st webrtc.PeerConnectionState) {
		switch st {
		case webrtc.PeerConnectionStateConnected:
			p.notePair()
		case webrtc.PeerConnectionStateFailed, webrtc.PeerConnectionStateClosed:
			p.cancel()
		}
	})
	pc.OnDataChannel(p.onChannel)
	return p
}

func (p *peer) close() { p.cancel(); _ = p.pc.Close() }

// finished reports whether the peer connection is over.
func (p *peer) finished() bool { return p.ctx.Err() != nil }

// ms is t on the server's clock for test messages: ms since the peer began.
func (p *peer) ms(t time.Time) float64 { return float64(t.Sub(p.epoch)) / 1e6 }

// answer applies the page's offer and returns the complete answer.
func (p *peer) answer(ctx context.Context, sdp string) (string, int, error) {
	if err := p.pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeOffer, SDP: sdp}); err != nil {
		return "", http.StatusBadRequest, fmt.Errorf("invalid SDP offer: %w", err)
	}
	ans, err := p.pc.CreateAnswer(nil)
	if err != nil {
		return "", http.StatusBadRequest, fmt.Errorf("cannot answer the offer: %w", err)
	}
	gathered := webrtc.GatheringCompletePromise(p.pc)
	if err := p.pc.SetLocalDescription(ans); err != nil {
		return "", http.StatusInternalServerError, fmt.Errorf("set local description: %w", err)
	}
	t := time.NewTimer(5 * time.Second)
	defer t.Stop()
	select {
	case <-gathered:
	case <-t.C:
		return "", http.StatusInternalServerError, errors.New("ICE candidate gathering took over 5 s")
	case <-ctx.Done():
		return "", http.StatusServiceUnavailable, ctx.Err()
	}
	return p.pc.LocalDescription().SDP, 0, nil
}

func (p *peer) notePair() {
	tr := p.pc.SCTP().Transport().ICETransport()
	pair, err := tr.GetSelectedCandidatePair()
	if err != nil || pair == nil {
		return
	}
	p.mu.Lock()
	p.res.Pair = fmt.Sprintf("%s %s:%d ↔ %s %s:%d", pair.Local.Typ, pair.Local.Address, pair.Local.Port,
		pair.Remote.Typ, pair.Remote.Address, pair.Remote.Port)
	p.mu.Unlock()
}

func (p *peer) onChannel(dc *webrtc.DataChannel) {
	switch dc.Label() {
	case labelCtl:
		p.mu.Lock()
		p.ctl = dc
		p.mu.Unlock()
		dc.OnMessage(func(m webrtc.DataChannelMessage) { p.onCtl(m) })
	case labelData:
		if mr := dc.MaxRetransmits(); dc.Ordered() || mr == nil || *mr != 0 {
			p.fail(errors.New(`the "data" channel must be unordered with maxRetransmits 0`))
			_ = dc.Close()
			return
		}
		p.mu.Lock()
		p.data = dc
		p.mu.Unlock()
		dc.OnMessage(p.onData)
	default:
		_ = dc.Close()
	}
}

// onData records one upload arrival.
func (p *peer) onData(m webrtc.DataChannelMessage) {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.phase == phaseDown {
		if seq, _, ok := parseHeader(m.Data, phaseAck); ok && int64(seq) > p.ackNext {
			// Never beyond what was sent, whatever the page says.
			p.ackNext = min(int64(seq), p.win.highest+1)
			p.win.acked(p.ackNext, p.win.highest, time.Since(p.downStart))
			select {
			case p.ack <- struct{}{}:
			default:
			}
		}
		return
	}
	if p.phase != phaseUp {
		return // stragglers after the count, or before it
	}
	seq, sendMs, ok := parseHeader(m.Data, phaseUp)
	if m.IsString || !ok || len(m.Data) != p.res.MessageBytes {
		p.upMalformed++
		return
	}
	if len(p.up) < p.svc.cfg.MaxRecords {
		p.up = append(p.up, Record{Seq: seq, SendMs: sendMs, RecvMs: p.ms(now)})
	}
	// Acknowledge like the page does for the download, so the page's
	// sender keeps a window too (Chromium's SCTP overruns its own UDP
	// send queue otherwise, and that reads as loss).
	p.upNext = max(p.upNext, int64(seq)+1)
	p.upCount++
	if p.upCount%ackEvery == 0 || now.Sub(p.upLastAck) > ackPause {
		p.upLastAck = now
		b := make([]byte, headerLen)
		putHeader(b, phaseAck, uint32(p.upNext), p.ms(now))
		_ = p.data.Send(b)
	}
}

func (p *peer) onCtl(m webrtc.DataChannelMessage) {
	var c ctlMsg
	if !m.IsString || len(m.Data) > 4096 || json.Unmarshal(m.Data, &c) != nil {
		p.send(ctlMsg{Op: "error", Error: "control messages are JSON text"})
		return
	}
	switch {
	case c.Op == "start" && (c.Dir == dirUpload || c.Dir == dirDownload):
		dur := time.Duration(c.DurationS * float64(time.Second))
		if c.Size < MinMessage || c.Size > MaxMessage || dur <= 0 || dur > p.svc.cfg.MaxDirection {
			p.send(ctlMsg{Op: "error", Dir: c.Dir, Error: fmt.Sprintf("start: size must be %d–%d bytes and duration 0–%v",
				MinMessage, MaxMessage, p.svc.cfg.MaxDirection)})
			return
		}
		if c.Dir == dirUpload {
			p.startUpload(c.Size, c.DurationS, dur)
		} else {
			p.startDownload(c.Size, c.DurationS, dur)
		}
	case c.Op == "end" && c.Dir == dirUpload:
		sent := -1
		if c.Sent != nil && *c.Sent >= 0 {
			sent = *c.Sent
		}
		datagrams := -1
		if c.Datagrams != nil && *c.Datagrams >= 0 {
			datagrams = *c.Datagrams
		}
		time.AfterFunc(uploadGrace, func() { p.finishUpload(sent, c.SendS, datagrams) })
	default:
		p.send(ctlMsg{Op: "error", Error: fmt.Sprintf("unknown control message %q %q", c.Op, c.Dir)})
	}
}

func (p *peer) send(c ctlMsg) {
	p.mu.Lock()
	ctl := p.ctl
	p.mu.Unlock()
	if ctl == nil {
		return
	}
	b, _ := json.Marshal(c)
	_ = ctl.SendText(string(b))
}

func (p *peer) fail(err error) {
	p.mu.Lock()
	p.res.Errors = append(p.res.Errors, "server: "+err.Error())
	p.mu.Unlock()
	p.send(ctlMsg{Op: "error", Error: err.Error()})
}

func (p *peer) startUpload(size int, durS float64, dur time.Duration) {
	p.mu.Lock()
	if p.phase != 0 || p.upDone {
		p.mu.Unlock()
		p.send(ctlMsg{Op: "error", Dir: dirUpload, Error: "upload already run"})
		return
	}
	p.phase, p.res.MessageBytes, p.res.DurationS = phaseUp, size, durS
	p.upNext, p.upCount, p.upLastAck = 0, 0, time.Time{}
	// If the page never says it finished, count what arrived anyway.
	// (Its "end" can come late: a control message lost on a busy path is
	// retransmitted only after SCTP's backed-off timeout.)
	p.upTimer = time.AfterFunc(dur+20*time.Second, func() { p.finishUpload(-1, 0, -1) })
	p.mu.Unlock()
	// Before "ready": every datagram the page sends for the test comes
	// after this count.
	_, recv, ok := p.pairCounts()
	ice, mux := p.stackDrops()
	p.mu.Lock()
	p.upRecv0, p.upRecvOK = recv, ok
	p.upDrops0 = [2]int{ice, mux}
	p.mu.Unlock()
	p.send(ctlMsg{Op: "ready", Dir: dirUpload})
}

// finishUpload computes the upload direction from the arrivals; sent and
// datagrams are the page's counts of messages and datagrams (-1: unknown).
func (p *peer) finishUpload(sent int, sendS float64, datagrams int) {
	_, recv, pairOK := p.pairCounts()
	ice, mux := p.stackDrops()
	p.mu.Lock()
	p.svc.cfg.Logger.Info("webrtc upload", "session", p.id, "sent", sent, "records", len(p.up), "phase", p.phase,
		"stack_drops", ice-p.upDrops0[0]+mux-p.upDrops0[1])
	if p.phase != phaseUp {
		p.mu.Unlock()
		return
	}
	p.upDrops = [2]int{ice - p.upDrops0[0], mux - p.upDrops0[1]}
	if n := p.upDrops[0] + p.upDrops[1]; n > 0 {
		// Not the path's: say so beside the figures, which include them.
		p.res.Errors = append(p.res.Errors, fmt.Sprintf("server: its WebRTC stack dropped %d of the upload's datagrams "+
			"(%d before its datagram count) while busy; they count as lost", n, p.upDrops[0]))
	}
	p.phase, p.upDone = 0, true
	p.upTimer.Stop()
	d := Analyze(dirUpload, p.up, sent, p.res.MessageBytes, sendS)
	d.Malformed += p.upMalformed
	if datagrams >= 0 && pairOK && p.upRecvOK {
		d.Datagrams = datagramCount(datagrams, recv-p.upRecv0)
	}
	p.res.Upload = &d
	p.up = nil
	p.mu.Unlock()
	p.send(ctlMsg{Op: "done", Dir: dirUpload, Result: &d})
}

func (p *peer) startDownload(size int, durS float64, dur time.Duration) {
	p.mu.Lock()
	data := p.data
	busy := p.phase != 0 || p.down != nil
	if !busy {
		p.phase, p.ackNext, p.ack, p.win = phaseDown, 0, make(chan struct{}, 1), newWindow()
		p.res.MessageBytes, p.res.DurationS = size, durS
	}
	p.mu.Unlock()
	switch {
	case busy:
		p.send(ctlMsg{Op: "error", Dir: dirDownload, Error: "download already run or upload still running"})
		return
	case data == nil:
		p.send(ctlMsg{Op: "error", Dir: dirDownload, Error: `no "data" channel`})
		p.mu.Lock()
		p.phase = 0
		p.mu.Unlock()
		return
	}
	sent0, _, ok := p.pairCounts()
	p.mu.Lock()
	ack := p.ack
	p.downSent0, p.downSentOK = sent0, ok
	p.mu.Unlock()
	p.send(ctlMsg{Op: "ready", Dir: dirDownload})
	go p.sendDownload(data, ack, size, dur)
}

// sendDownload sends test messages for dur, refilling the channel's queue
// whenever the buffered-amount-low event says it ran low or an
// acknowledgement opens the window; the server's rate cap only ever holds
// it back.
func (p *peer) sendDownload(dc *webrtc.DataChannel, ack <-chan struct{}, size int, dur time.Duration) {
	low := make(chan struct{}, 1)
	dc.SetBufferedAmountLowThreshold(sendLow)
	dc.OnBufferedAmountLow(func() {
		select {
		case low <- struct{}{}:
		default:
		}
	})
	start := time.Now()
	p.mu.Lock()
	p.downStart = start
	p.mu.Unlock()
	end := start.Add(dur)
	deadline := time.NewTimer(dur)
	defer deadline.Stop()
	stall := time.NewTimer(ackStall)
	defer stall.Stop()
	bitsPerMsg := float64(size * 8)
	var seq uint32
	var last time.Time
	var err error
	// open reports whether the window lets message seq go at now, and if
	// so records its send time.
	open := func(now time.Time) bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		if int64(seq)-p.ackNext >= p.win.size {
			return false
		}
		p.win.sent(seq, now.Sub(start))
		p.win.highest = int64(seq)
		return true
	}
loop:
	for {
		for dc.BufferedAmount() < sendHigh {
			now := time.Now()
			if !now.Before(end) {
				break loop
			}
			if ahead := float64(seq)*bitsPerMsg/p.svc.cfg.MaxBitrate - now.Sub(start).Seconds(); ahead > 0.002 {
				time.Sleep(time.Duration(ahead * float64(time.Second)))
				continue
			}
			if !open(now) {
				break
			}
			b := make([]byte, size)
			putHeader(b, phaseDown, seq, p.ms(now))
			if err = dc.Send(b); err != nil {
				break loop
			}
			seq++
			last = now
		}
		stall.Reset(ackStall)
		select {
		case <-low:
		case <-ack:
		case <-stall.C:
			// No acknowledgement for a while: the window was lost, or the
			// page is stalled. Send one more message, as TCP does after a
			// timeout: its acknowledgement (cumulative) reopens the window;
			// a stalled page gets one message per stall, not a window.
			p.mu.Lock()
			p.ackNext = max(p.ackNext, int64(seq)-p.win.size+1)
			p.mu.Unlock()
		case <-deadline.C:
			break loop
		case <-p.ctx.Done():
			return
		}
	}
	// Let the queue drain so "end" does not overtake the last messages.
	for t := time.Now(); dc.BufferedAmount() > 0 && time.Since(t) < drainWait && p.ctx.Err() == nil; {
		time.Sleep(5 * time.Millisecond)
	}
	sent := int(seq)
	st := &downState{sent: sent, size: size}
	if !last.IsZero() {
		st.sendS = last.Sub(start).Seconds()
	}
	p.mu.Lock()
	p.svc.cfg.Logger.Info("webrtc download", "session", p.id, "sent", sent, "acked", p.ackNext,
		"window", p.win.size, "min_rtt", p.win.minRTT)
	p.phase, p.down = 0, st
	if err != nil {
		p.res.Errors = append(p.res.Errors, "server: download: "+err.Error())
	}
	p.mu.Unlock()
	p.send(ctlMsg{Op: "end", Dir: dirDownload, Sent: &sent, SendS: st.sendS})
}

// recordsLimit is how many download records the page may post now, or
// why it may post none: only once the download has finished and before
// its records arrived, and at most twice what the server sent (every
// message duplicated on the way) plus a few, within Config.MaxRecords.
func (p *peer) recordsLimit() (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.down == nil:
		return 0, errors.New("the download direction has not finished")
	case p.down.have:
		return 0, errors.New("download records already received")
	}
	return min(2*max(p.down.sent, 0)+64, p.svc.cfg.MaxRecords), nil
}

// setDownload computes the download direction from the page's records;
// datagrams is the page's count of datagrams received during the phase
// (-1: unknown).
func (p *peer) setDownload(recs []Record, datagrams int) error {
	sent1, _, pairOK := p.pairCounts()
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.down == nil:
		return errors.New("the download direction has not finished")
	case p.down.have:
		return errors.New("download records already received")
	}
	p.down.have = true
	d := Analyze(dirDownload, recs, p.down.sent, p.down.size, p.down.sendS)
	if datagrams >= 0 && pairOK && p.downSentOK {
		d.Datagrams = datagramCount(sent1-p.downSent0, datagrams)
	}
	p.res.Download = &d
	return nil
}

// pairCounts returns the datagrams sent and received on the ICE candidate
// pair in use (the one that carried the most), as pion counts them:
// application packets, not STUN.
func (p *peer) pairCounts() (sent, recv int, ok bool) {
	best := -1
	for _, st := range p.pc.GetStats() {
		cp, isPair := st.(webrtc.ICECandidatePairStats)
		if !isPair {
			continue
		}
		if n := int(cp.PacketsSent) + int(cp.PacketsReceived); n > best {
			best, sent, recv = n, int(cp.PacketsSent), int(cp.PacketsReceived)
		}
	}
	return sent, recv, best >= 0
}

// stackDrops returns the datagrams the peer's pion stack dropped so far
// (stackDrops): before the candidate pair counted them, and after.
func (p *peer) stackDrops() (ice, mux int) {
	if p.drops == nil {
		return 0, 0
	}
	return p.drops.total()
}

// datagramCount compares a phase's datagram counts; a receiver that counted
// more than were sent (the windows' odd control packet) is taken as no loss.
func datagramCount(sent, received int) *model.DatagramCount {
	if sent <= 0 || received < 0 {
		return nil
	}
	c := &model.DatagramCount{Sent: sent, Received: received}
	c.LossPct = 100 * float64(max(sent-received, 0)) / float64(sent)
	return c
}

// result returns a copy of the result so far.
func (p *peer) result() *model.WebRTCResult {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.res
	r.Errors = append([]string(nil), p.res.Errors...)
	return &r
}
