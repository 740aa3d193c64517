//go:build linux

package forward

import (
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sonde-project/sonde/internal/emulator"
)

// Device is a packet device with a non-blocking descriptor.
type Device interface {
	Fd() int
	// ReadPackets reads once and calls emit with each packet read, in
	// order (a TUN device with offloads can return many segments at
	// once); the slice is valid only during the call. With nothing to
	// read it returns unix.EAGAIN.
	ReadPackets(emit func([]byte)) (int, error)
	// WritePackets writes packets in order, perhaps several in one
	// write; before each write it calls before(i, n) for the packets
	// pkts[i:i+n] it carries. It sets failed[i] for each packet a failed
	// write carried, and returns the first error.
	WritePackets(pkts [][]byte, failed []bool, before func(i, n int)) error
}

// DefaultSpin is how long before a deadline the thread stops sleeping.
const DefaultSpin = 10 * time.Microsecond

// Config describes one emulated link between devices A (client side) and
// B (server side).
type Config struct {
	A, B Device
	// Up is the A→B direction, Down is B→A. Their Dropped and Clone
	// hooks are set by the forwarder.
	Up, Down emulator.Config
	// Start is model time zero, shared by every link of a lab so that their
	// ground-truth times compare.
	Start time.Time
	// Truth, if set, receives one record per packet.
	Truth *emulator.TruthWriter
	// Link numbers this link in truth records.
	Link uint8
	// ICMPFrom4 and ICMPFrom6 are the source addresses of the ICMP errors
	// for packets over the MTU; invalid means "send none".
	ICMPFrom4, ICMPFrom6 netip.Addr
	// Recorder, if set, records every packet at both ends (pcapng).
	Recorder *Recorder
	// MaxPacket sizes the packet buffers (default 65535): the largest
	// packet the link carries. A larger one gets a buffer of its own.
	MaxPacket int
	// Spin is the busy-wait before each deadline (default DefaultSpin;
	// negative: never spin).
	Spin time.Duration
	// RealTime runs the forwarding threads under SCHED_FIFO (priority
	// RealTimePriority) when permitted; if refused, they stay in the
	// normal class (see Stats.RealTime). Experimental: on a loaded 2-core
	// VM it made the worst delays longer (a FIFO thread waiting for a Go
	// P held by a starved normal thread, RT throttling), so it is off by
	// default.
	RealTime bool
	// AllowCPUIdle lets idle CPUs halt while forwarding. By default the
	// forwarder holds a PM QoS CPU latency request of 0 µs
	// (/dev/cpu_dma_latency, as tuned's latency profiles do), so idle
	// CPUs poll instead: a halted virtual CPU takes tens of µs to wake
	// for a packet, and that wait is before the packet is stamped, so it
	// is real delay the ground truth cannot see. Measured on the 2-core
	// VM, 10 ms each way: ping median 20.3–20.4 ms with idle CPUs
	// halting, 20.2 ms with the request held. The cost is power (idle CPUs spin).
	AllowCPUIdle bool
}

// RealTimePriority is the SCHED_FIFO priority of the forwarding threads.
const RealTimePriority = 10

// Forwarder is a running link.
type Forwarder struct {
	dirs [2]*direction
	qos  *cpuLatency // nil when idle CPUs may halt or the request failed
	wg   sync.WaitGroup
	once sync.Once
	done chan struct{}
}

// Start builds both directions' models and starts forwarding.
func Start(c Config) (*Forwarder, error) {
	if c.A == nil || c.B == nil {
		return nil, errors.New("forward: two devices are needed")
	}
	if c.Start.IsZero() {
		c.Start = time.Now()
	}
	if c.MaxPacket == 0 {
		c.MaxPacket = 65535
	}
	if c.Spin == 0 {
		c.Spin = DefaultSpin
	}
	f := &Forwarder{done: make(chan struct{})}
	up := newDirection(&c, emulator.Up, c.A, c.B)
	down := newDirection(&c, emulator.Down, c.B, c.A)
	if err := buildModels(up, down, c.Up, c.Down); err != nil {
		return nil, err
	}
	if err := up.open(); err != nil {
		return nil, err
	}
	if err := down.open(); err != nil {
		up.close()
		return nil, err
	}
	up.peer, down.peer = down, up
	f.dirs = [2]*direction{up, down}
	// Each direction holds a P while it works; without two more, a
	// direction returning from ppoll can wait for a P behind a GC worker
	// or the other direction for milliseconds.
	adjustProcs(+2)
	if !c.AllowCPUIdle {
		// Without permission (not root) the forwarder works, only with
		// the wake-up delay of halted CPUs; Stats.CPUAwake says which.
		f.qos, _ = holdCPUAwake()
	}
	for _, d := range f.dirs {
		d.awake = f.qos != nil
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			d.run()
		}()
	}
	go func() {
		f.wg.Wait()
		close(f.done)
	}()
	return f, nil
}

// Done is closed when both directions have stopped (after Stop, or when a
// device failed: see Err).
func (f *Forwarder) Done() <-chan struct{} { return f.done }

// Stop ends forwarding, records what was still inside the link as
// DropShutdown, and returns the first device error, if any. It does not
// close the devices.
func (f *Forwarder) Stop() error {
	f.once.Do(func() {
		for _, d := range f.dirs {
			d.stop.Store(true)
			d.wakeUp()
		}
		<-f.done
		for _, d := range f.dirs {
			d.close()
		}
		adjustProcs(-2)
		if f.qos != nil {
			f.qos.release()
		}
	})
	return f.Err()
}

// Err returns the first error that stopped a direction.
func (f *Forwarder) Err() error {
	var errs []error
	for _, d := range f.dirs {
		d.mu.Lock()
		if d.err != nil {
			errs = append(errs, d.err)
		}
		d.mu.Unlock()
	}
	return errors.Join(errs...)
}

var procsMu sync.Mutex

// adjustProcs changes GOMAXPROCS by delta, keeping at least the CPU count.
func adjustProcs(delta int) {
	procsMu.Lock()
	defer procsMu.Unlock()
	runtime.GOMAXPROCS(max(runtime.GOMAXPROCS(0)+delta, runtime.NumCPU()))
}

// Stats is a direction's live state.
type Stats struct {
	emulator.Counters
	WriteErrors uint64          `json:"write_errors"`
	RealTime    bool            `json:"realtime"`  // thread runs SCHED_FIFO
	CPUAwake    bool            `json:"cpu_awake"` // idle CPUs poll (AllowCPUIdle unset and the request held)
	Params      emulator.Params `json:"params"`
}

// Stats returns recent counters (at most about 10 ms old) of both
// directions.
func (f *Forwarder) Stats() (up, down Stats) {
	return f.dirs[0].stats(), f.dirs[1].stats()
}

// model is a direction's link model: an *emulator.Link, or its side of a
// half-duplex link (lockedSide).
type model interface {
	Enqueue(p *emulator.Packet, now time.Duration) bool
	Release(now time.Duration, out []*emulator.Packet) []*emulator.Packet
	Next() (time.Duration, bool)
	Flush()
	Counters() emulator.Counters
	Params() emulator.Params
}

// lockedSide is one direction of a half-duplex link. The two directions'
// threads advance one model (either may serve the other's packets), so
// every call holds the link's mutex. A thread stamps a packet's arrival
// before it takes the mutex: if the other thread advanced the model past
// that stamp meanwhile, the arrival counts at the model's time (late by
// at most the wait for the mutex, one model call of the other thread).
type lockedSide struct {
	mu *sync.Mutex
	s  *emulator.Side
}

func (l lockedSide) Enqueue(p *emulator.Packet, now time.Duration) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.Enqueue(p, now)
}

func (l lockedSide) Release(now time.Duration, out []*emulator.Packet) []*emulator.Packet {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.Release(now, out)
}

func (l lockedSide) Next() (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.Next()
}

func (l lockedSide) Flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.s.Flush()
}

func (l lockedSide) Counters() emulator.Counters {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.Counters()
}

func (l lockedSide) Params() emulator.Params {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.Params()
}

// buildModels makes both directions' models: a Link each, or the two sides
// of one half-duplex link.
func buildModels(up, down *direction, cu, cd emulator.Config) error {
	cu.Dropped, cu.Clone = up.dropped, up.clone
	cd.Dropped, cd.Clone = down.dropped, down.clone
	if !cu.Params.HalfDuplex && !cd.Params.HalfDuplex {
		lu, err := emulator.NewLink(cu)
		if err != nil {
			return fmt.Errorf("up direction: %w", err)
		}
		ld, err := emulator.NewLink(cd)
		if err != nil {
			return fmt.Errorf("down direction: %w", err)
		}
		up.link, up.inModel, down.link, down.inModel = lu, lu, ld, ld
		return nil
	}
	h, err := emulator.NewHalfDuplex(cu, cd)
	if err != nil {
		return fmt.Errorf("half-duplex link: %w", err)
	}
	mu := &sync.Mutex{}
	for _, d := range []*direction{up, down} {
		side := h.Dir(d.id)
		d.link, d.inModel, d.half = lockedSide{mu, side}, side, true
	}
	return nil
}

// direction forwards one way.
type direction struct {
	cfg     *Config
	id      uint8
	in, out Device
	link    model
	// inModel is the model for the hooks the model calls (Dropped), which
	// run with a half-duplex link's mutex held.
	inModel interface{ Params() emulator.Params }
	// half: the other direction's thread may drop this direction's
	// packets (a half-duplex medium serves both), so dropped packets are
	// not recycled: the free list is this thread's alone.
	half bool
	wake int // eventfd: stop and injected packets
	peer *direction
	stop atomic.Bool

	free   []*emulator.Packet
	rel    []*emulator.Packet
	budget spinBudget
	// relData and failed are the released packets' bytes and write
	// failures, kept to reuse their arrays.
	relData [][]byte
	failed  []bool

	// enqueue and beforeWrite are enqueueRead and stampWrite as func
	// values made once: a method value made per call would allocate.
	enqueue     func([]byte)
	beforeWrite func(i, n int)
	readAt      time.Duration // when the current read returned
	stamped     bool          // readAt is set for the current read

	injMu  sync.Mutex
	inject [][]byte

	mu        sync.Mutex
	snap      Stats
	err       error
	writeErrs uint64
	lastSnap  time.Duration
	rt        bool
	awake     bool
}

func newDirection(c *Config, id uint8, in, out Device) *direction {
	d := &direction{cfg: c, id: id, in: in, out: out}
	d.enqueue = d.enqueueRead
	d.beforeWrite = d.stampWrite
	return d
}

// open makes the direction's eventfd, once its model is built.
func (d *direction) open() error {
	var err error
	d.wake, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return fmt.Errorf("eventfd: %w", err)
	}
	d.snap.Params = d.link.Params()
	return nil
}

func (d *direction) close() { unix.Close(d.wake) }

func (d *direction) now() time.Duration { return time.Since(d.cfg.Start) }

// get takes a packet buffer from the direction's free list.
func (d *direction) get() *emulator.Packet {
	if n := len(d.free); n > 0 {
		p := d.free[n-1]
		d.free = d.free[:n-1]
		p.Data = p.Data[:cap(p.Data)]
		return p
	}
	return &emulator.Packet{Data: make([]byte, d.cfg.MaxPacket), Ctx: d}
}

// put returns a packet to the free list; packets not from it (injected
// ICMP errors) are left to the garbage collector.
func (d *direction) put(p *emulator.Packet) {
	if p.Ctx == d && len(d.free) < 4096 {
		d.free = append(d.free, p)
	}
}

func (d *direction) clone(p *emulator.Packet) *emulator.Packet {
	c := d.get()
	c.Data = append(c.Data[:0], p.Data...)
	return c
}

// dropped records a discarded packet, answers an oversized one with an ICMP
// error through the other direction, and recycles it.
func (d *direction) dropped(p *emulator.Packet) {
	d.record(p)
	if p.Fate == emulator.DropMTU {
		from := d.cfg.ICMPFrom4
		if len(p.Data) > 0 && p.Data[0]>>4 == 6 {
			from = d.cfg.ICMPFrom6
		}
		if from.IsValid() {
			if icmp := emulator.TooBig(p.Data, d.inModel.Params().MTU, from); icmp != nil {
				d.peer.injectPacket(icmp)
			}
		}
	}
	if !d.half {
		d.put(p)
	}
}

func (d *direction) record(p *emulator.Packet) {
	if d.cfg.Truth != nil {
		d.cfg.Truth.Write(emulator.NewRecord(p, d.cfg.Link, d.id))
	}
}

// injectPacket queues a packet generated by the emulator itself (an ICMP
// error) to travel this direction.
func (d *direction) injectPacket(b []byte) {
	d.injMu.Lock()
	d.inject = append(d.inject, b)
	d.injMu.Unlock()
	d.wakeUp()
}

func (d *direction) wakeUp() {
	var one = [8]byte{1}
	unix.Write(d.wake, one[:])
}

// capture records a packet at the A or B end of the link; inbound means
// it is entering that end's node.
func (d *direction) capture(atB, inbound bool, at time.Duration, b []byte) {
	if c := d.cfg.Recorder; c != nil {
		c.packet(atB, inbound, d.cfg.Start.Add(at), b)
	}
}

func (d *direction) run() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// Sleep with nanosecond rather than the default 50 µs timer slack.
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	if d.cfg.RealTime {
		d.realTime()
	}
	fds := []unix.PollFd{
		{Fd: int32(d.in.Fd()), Events: unix.POLLIN},
		{Fd: int32(d.wake), Events: unix.POLLIN},
	}
	spin := max(d.cfg.Spin, 0)
	var drain [8]byte
	for !d.stop.Load() {
		d.takeInjected()
		if err := d.readBatch(); err != nil {
			d.fail(err)
			break
		}
		now := d.release()
		d.publish(now)
		next, ok := d.link.Next()
		d.budget.charge(now)
		var timeout *unix.Timespec
		if ok {
			wait := next - d.now()
			if wait <= 0 {
				continue // due: release it
			}
			sleep := sleepFor(wait, spin)
			switch {
			case !d.budget.left():
				// Busy-polling took its share: wake once at the deadline,
				// and no sooner than coalesce after now, and deliver
				// what is due by then together.
				sleep = max(wait, coalesce)
			case sleep <= 0:
				d.budget.spend()
				continue // busy-poll until the deadline
			}
			ts := unix.NsecToTimespec(int64(sleep))
			timeout = &ts
		}
		if err := rawPpoll(fds, timeout); err != nil && err != unix.EINTR {
			d.fail(fmt.Errorf("ppoll: %w", err))
			break
		}
		if fds[1].Revents != 0 {
			unix.Read(d.wake, drain[:])
		}
		if fds[0].Revents&(unix.POLLERR|unix.POLLHUP|unix.POLLNVAL) != 0 {
			d.fail(fmt.Errorf("ingress device: poll events %#x", fds[0].Revents))
			break
		}
	}
	d.link.Flush()
	d.publish(-1)
}

// SpinShare is the largest share of a direction's time that busy-polling
// may take, over any stretch longer than spinBurst. When packets are due
// closer together than the spin (10 µs is less than one full packet's
// serialisation at 1 Gbit/s), unbounded busy-polling and sub-10 µs sleeps
// kept the two threads of a lan-20ms link at about 1.24 cores during a 1 Gbit/s
// download, the CPU the endpoints measure with. Past the share, a thread
// sleeps to each deadline and at least coalesce, and delivers what is due
// then in one go, as a NIC's interrupt moderation does.
const SpinShare = 0.1

// coalesce is the shortest sleep once busy-polling has taken its share:
// the most a packet is delivered late for it, plus the timer's own wake-up
// latency. Real gigabit NICs moderate interrupts over tens of µs; the
// ground truth records when each packet was actually written.
const coalesce = 50 * time.Microsecond

// spinBurst is how much busy-polling may be saved up while the thread
// sleeps: enough for the spins before a few isolated deadlines in a row.
const spinBurst = time.Millisecond

// spinBudget is a token bucket of busy-polling time.
type spinBudget struct {
	tokens   time.Duration
	last     time.Duration // when charge last ran
	spinning bool          // the thread busy-polled since then
}

// charge refills the bucket at SpinShare for the time since the last
// call, and takes that time out of it if the thread was busy-polling.
func (b *spinBudget) charge(now time.Duration) {
	elapsed := max(now-b.last, 0)
	b.last = now
	if b.spinning {
		b.tokens -= elapsed
		b.spinning = false
	}
	b.tokens = min(b.tokens+time.Duration(float64(elapsed)*SpinShare), spinBurst)
}

// left reports whether the thread may busy-poll.
func (b *spinBudget) left() bool { return b.tokens > 0 }

// spend notes that the thread busy-polls until the next charge.
func (b *spinBudget) spend() { b.spinning = true }

// realTime moves the calling thread to SCHED_FIFO.
func (d *direction) realTime() {
	type schedParam struct{ priority int32 }
	p := schedParam{RealTimePriority}
	_, _, errno := unix.RawSyscall(unix.SYS_SCHED_SETSCHEDULER, 0, 1 /* SCHED_FIFO */, uintptr(unsafe.Pointer(&p)))
	d.mu.Lock()
	d.snap.RealTime = errno == 0
	d.rt = errno == 0
	d.mu.Unlock()
}

// sleepFor is how long to sleep when the next deadline is wait away. A
// long sleep oversleeps more (a halted virtual CPU takes a while to wake:
// tens to hundreds of µs), so the thread wakes early by an eighth of the
// wait and sleeps again, ever shorter and more precisely, and busy-polls
// the last spin.
func sleepFor(wait, spin time.Duration) time.Duration {
	return wait - spin - min(wait/8, 2*time.Millisecond)
}

func (d *direction) fail(err error) {
	d.mu.Lock()
	if d.err == nil {
		d.err = err
	}
	d.mu.Unlock()
}

func (d *direction) takeInjected() {
	d.injMu.Lock()
	pkts := d.inject
	d.inject = nil
	d.injMu.Unlock()
	for _, b := range pkts {
		d.link.Enqueue(&emulator.Packet{Data: b}, d.now())
	}
}

// readBatch reads what the ingress device holds (at most 256 packets, so
// that due packets are not held back by a flood).
func (d *direction) readBatch() error {
	for read := 0; read < 256; {
		d.stamped = false
		n, err := d.in.ReadPackets(d.enqueue)
		if err != nil {
			if err == unix.EAGAIN || err == unix.EINTR {
				return nil
			}
			return fmt.Errorf("read: %w", err)
		}
		read += n
	}
	return nil
}

// enqueueRead copies a packet just read into the link. Every packet of one
// read is stamped with the time the read returned: the sender handed them
// over together.
func (d *direction) enqueueRead(b []byte) {
	if !d.stamped {
		d.readAt, d.stamped = d.now(), true
	}
	p := d.get()
	p.Data = append(p.Data[:0], b...)
	d.capture(d.id == emulator.Down, false, d.readAt, p.Data)
	d.link.Enqueue(p, d.readAt)
}

// release writes every due packet and returns the time it looked.
func (d *direction) release() time.Duration {
	now := d.now()
	d.rel = d.link.Release(now, d.rel[:0])
	if len(d.rel) == 0 {
		return now
	}
	d.relData = d.relData[:0]
	for _, p := range d.rel {
		d.relData = append(d.relData, p.Data)
	}
	d.failed = append(d.failed[:0], make([]bool, len(d.rel))...)
	_ = d.out.WritePackets(d.relData, d.failed, d.beforeWrite) // failures are counted per packet
	for i, p := range d.rel {
		if d.failed[i] {
			p.Fate = emulator.DropWrite
			d.writeErrs++
		}
		d.record(p)
		d.put(p)
		d.rel[i] = nil
		d.relData[i] = nil
	}
	return now
}

// stampWrite stamps and captures the released packets rel[i:i+n] just
// before the one write that carries them: the write itself runs the
// receiving stack and can take tens of µs, so each write has its own time.
// They are captured before the write: it hands the packets to the receiver,
// whose answer the other direction's thread can read and capture before
// this one got back to capture the packet it answers (a capture out of
// causal order, seen once the threads woke up faster). A packet whose
// write fails stays in the capture; the ground truth has it as DropWrite.
func (d *direction) stampWrite(i, n int) {
	sent := d.now()
	atB := d.id == emulator.Up
	for _, p := range d.rel[i : i+n] {
		p.Sent = sent
		d.capture(atB, true, sent, p.Data)
	}
}

// publish refreshes the counters others read, at most every 10 ms
// (always when now < 0).
func (d *direction) publish(now time.Duration) {
	if now >= 0 && now-d.lastSnap < 10*time.Millisecond {
		return
	}
	d.lastSnap = now
	d.mu.Lock()
	d.snap = Stats{Counters: d.link.Counters(), WriteErrors: d.writeErrs, Params: d.link.Params(), RealTime: d.rt, CPUAwake: d.awake}
	d.mu.Unlock()
}

func (d *direction) stats() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.snap
}

// rawPpoll waits in ppoll without telling the Go scheduler. Through
// unix.Ppoll, every wake-up paid exitsyscall: reacquiring a P, often after
// sysmon had retaken it, and waking sysmon by futex; about 40 µs per packet
// on the 2-core VM (ping through a zero-delay link: median 0.215 ms, 0.135
// ms this way, 0.060 ms on a bare veth). The thread keeps its P while it
// waits, which is why Start raises GOMAXPROCS by two per link; the garbage
// collector and sysmon still stop it by signal (ppoll returns EINTR).
// Measured: the worst runtime.GC with an idle lab was the same either way.
func rawPpoll(fds []unix.PollFd, ts *unix.Timespec) error {
	_, _, e := unix.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&fds[0])), uintptr(len(fds)), uintptr(unsafe.Pointer(ts)), 0, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}
