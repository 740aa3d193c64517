package emulator

import "time"

// FQ-CoDel defaults (RFC 8290 §5).
const (
	FQFlows   = 1024
	FQQuantum = 1514
)

// fqFlow is one flow queue with its own CoDel state and DRR deficit.
type fqFlow struct {
	q       fifo
	st      codel
	deficit int
	list    int8 // 0 none, 1 new, 2 old
}

// fqCoDel is RFC 8290: packets hashed by 5-tuple into FQFlows queues served
// by deficit round robin with new-flow priority, CoDel in each queue, and on
// overflow a drop from the head of the fattest queue.
type fqCoDel struct {
	flows     [FQFlows]fqFlow
	newFlows  []*fqFlow
	oldFlows  []*fqFlow
	hashStart uint64
	limit     limit
	cf        codelConfig
	n, nbytes int
}

func newFQCoDel(p *Params, seed uint64) *fqCoDel {
	f := &fqCoDel{hashStart: seededHash(seed ^ streamFlow)}
	f.setParams(p)
	return f
}

func (f *fqCoDel) setParams(p *Params) {
	f.limit = newLimit(p)
	if p.LimitPackets == 0 && p.LimitBytes == 0 {
		f.limit.pkts = 10240 // Linux fq_codel's default limit
	}
	m := f.cf.maxPacket
	f.cf = newCodelConfig(p)
	f.cf.maxPacket = max(m, f.cf.maxPacket)
}

func (f *fqCoDel) enqueue(p *Packet, _ time.Duration, drop dropFunc) bool {
	idx := uint32(flowHash(p.Data, f.hashStart) % FQFlows)
	p.flow = idx
	fl := &f.flows[idx]
	fl.q.push(p)
	f.n++
	f.nbytes += len(p.Data)
	f.cf.maxPacket = max(f.cf.maxPacket, len(p.Data))
	if fl.list == 0 {
		fl.list = 1
		fl.deficit = FQQuantum
		f.newFlows = append(f.newFlows, fl)
	}
	accepted := true
	for f.overLimit() {
		victim := f.dropFattest()
		if victim == p {
			accepted = false
			continue
		}
		drop(victim, DropQueue)
	}
	if !accepted {
		p.Fate = DropQueue
	}
	return accepted
}

func (f *fqCoDel) overLimit() bool {
	return f.n > 0 && ((f.limit.pkts > 0 && f.n > f.limit.pkts) || (f.limit.bytes > 0 && f.nbytes > f.limit.bytes))
}

// dropFattest removes the head of the queue holding the most bytes.
func (f *fqCoDel) dropFattest() *Packet {
	var fat *fqFlow
	for i := range f.flows {
		if fl := &f.flows[i]; fat == nil || fl.q.bytes() > fat.q.bytes() {
			fat = fl
		}
	}
	p := fat.q.pop()
	f.n--
	f.nbytes -= len(p.Data)
	return p
}

func (f *fqCoDel) dequeue(now time.Duration, drop dropFunc) *Packet {
	counted := func(p *Packet, fate Fate) {
		f.n--
		f.nbytes -= len(p.Data)
		drop(p, fate)
	}
	for {
		var fl *fqFlow
		fromNew := len(f.newFlows) > 0
		if fromNew {
			fl = f.newFlows[0]
		} else if len(f.oldFlows) > 0 {
			fl = f.oldFlows[0]
		} else {
			return nil
		}
		if fl.deficit <= 0 {
			fl.deficit += FQQuantum
			f.popHead(fromNew)
			fl.list = 2
			f.oldFlows = append(f.oldFlows, fl)
			continue
		}
		p := fl.st.dequeue(&fl.q, now, &f.cf, counted)
		if p == nil {
			f.popHead(fromNew)
			if fromNew && len(f.oldFlows) > 0 {
				// RFC 8290 §4.2: an emptied new flow goes to the old list
				// so that it cannot starve old flows by re-entering as new.
				fl.list = 2
				f.oldFlows = append(f.oldFlows, fl)
			} else {
				fl.list = 0
			}
			continue
		}
		f.n--
		f.nbytes -= len(p.Data)
		fl.deficit -= len(p.Data)
		return p
	}
}

func (f *fqCoDel) popHead(fromNew bool) {
	if fromNew {
		f.newFlows[0] = nil
		f.newFlows = f.newFlows[1:]
	} else {
		f.oldFlows[0] = nil
		f.oldFlows = f.oldFlows[1:]
	}
}

func (f *fqCoDel) len() int                 { return f.n }
func (f *fqCoDel) bytes() int               { return f.nbytes }
func (f *fqCoDel) nextTimer() time.Duration { return never }
func (f *fqCoDel) timer(time.Duration)      {}
