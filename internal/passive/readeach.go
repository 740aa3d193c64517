package passive

import (
	"fmt"
	"math/bits"
	"sync"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/pcap"
)

// Parallel analysis of one plain (uncompressed) file: every worker reads
// the whole file itself (its own reader; the page cache is shared), walks
// every packet, hashes its flow from the IP and port fields and skips the
// packets of the other workers' flows; it analyses only its own. No
// dispatcher, no copies, no channels: every worker sees every timestamp,
// so each keeps the capture clock one analyser would (its idle scans at
// the same capture times), and a flow's packets come in the file's
// order. The merge at the end is the dispatcher's (mergeShards).
// Compressed files, several files read as one and live capture keep the
// dispatcher (shard.go).

// readEach analyses path with every shard reading it; ok is false when
// the file is not for it (compressed, or not opened: the caller's path
// reports why), having read nothing.
func (a *Analyzer) readEach(path string) (cf model.CaptureFile, ok bool, err error) {
	if a.started || len(a.res.Files) > 0 {
		return cf, false, nil // a second read goes through the dispatcher's clock
	}
	n := len(a.shards)
	s, err := openSource(path, 0)
	if err != nil {
		return cf, false, nil
	}
	s.close()
	if s.comp != pcap.Uncompressed {
		return cf, false, nil
	}
	// A shared read-only mapping where there is one (no copy into each
	// worker's buffer: reading the file twice cost 0.15 s of system time
	// per worker on the bench's 10 M capture), each worker's reader
	// otherwise.
	srcs := make([]*source, 0, n)
	defer func() {
		for _, s := range srcs {
			s.close()
		}
	}()
	b, unmap := mapFile(path)
	if unmap != nil {
		defer unmap()
	}
	for range n {
		var s *source
		if b != nil {
			s, err = newSourceBytes(b, model.CaptureFile{Path: path})
		} else {
			s, err = openSource(path, 0)
		}
		if err != nil {
			return cf, false, nil
		}
		srcs = append(srcs, s)
	}
	var wg sync.WaitGroup
	for k, s := range srcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := a.shards[k].a
			for s.next() {
				w.frameOwn(s, k, n)
			}
		}()
	}
	wg.Wait()
	// The file's counts are worker 0's (every worker counted them); its
	// clock is every worker's.
	w0 := a.shards[0].a
	a.first, a.last, a.started, a.nextScan = w0.first, w0.last, w0.started, w0.nextScan
	a.dups.n += w0.dups.n
	a.res.Filtered += w0.res.Filtered
	s = srcs[0]
	a.endSource(s)
	if s.err != nil {
		err = fmt.Errorf("%s: %w", s.cf.Path, s.err)
	}
	return s.cf, true, err
}

// frameOwn is frame for worker k of n reading the whole file: every
// packet moves the clock; the packets of its flows are analysed. The
// packets that are not IP (and those malformed or fragments, hash 0) are
// worker 0's to count.
func (w *Analyzer) frameOwn(s *source, k, n int) {
	p := &s.p
	s.all++
	s.seen = max(s.seen, p.Interface)
	if w.cfg.Interface >= 0 && p.Interface != w.cfg.Interface {
		return
	}
	s.cf.Packets++
	ip := pcap.Network(p.LinkType, p.Data)
	if ip == nil {
		if k == 0 {
			if pcap.Supported(p.LinkType) {
				w.skip.notIP++
			} else {
				bump(w.skip.link, p.LinkType, 1)
			}
			w.res.Packets++
			w.res.Skipped++
		}
		return
	}
	// The duplicate filter and the filter see every packet in every
	// worker, so that each decides as one analyser would.
	if w.dups.copyOf(p.LinkType, p.Data, ip, p.TimeNs) {
		return
	}
	if w.cfg.Filter != nil && !w.cfg.Filter.Match(ip) {
		w.res.Filtered++
		return
	}
	var pk ipPacket
	var h uint64
	ok := decodeIP(ip, &pk)
	if ok && !pk.fragment {
		if w.tick(p.TimeNs) {
			w.evict(p.TimeNs)
		}
		h = flowHash(&pk)
	}
	if evenShard(h, n) != k {
		return
	}
	w.packet(p.TimeNs, ip, &pk, ok)
}

// evenShard maps a flow hash to one of n workers in equal shares (every
// worker reads: none has less analysis to do).
func evenShard(h uint64, n int) int {
	k, _ := bits.Mul64(h, uint64(n))
	return int(k)
}
