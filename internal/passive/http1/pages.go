package http1

import (
	"net/netip"
	"slices"
	"sort"

	"github.com/sonde-project/sonde/internal/model"
)

// DefaultPageGap separates page loads: a client's exchanges that start
// more than this after everything before them finished begin a new page
// load. A browser requests a page's objects as soon as it has parsed what
// refers to them (well under a second), while a person following a link
// or reloading takes longer.
const DefaultPageGap = 1.0 // seconds

type activity struct {
	conn       int
	start, end float64
	x          *model.HTTPExchange
	first      bool // the connection's first exchange: its start is the connection's
}

// Pages groups the HTTP exchanges of conns into page loads per client
// address. An exchange's activity runs from its request's first byte (for
// a connection's first exchange: the connection's first packet, so that
// the handshake counts) to its response's last byte (or the last byte seen
// of it). Activities of one client closer than gap seconds to the running
// end of the current page join it.
func Pages(conns []model.TCPConn, gap float64) []model.HTTPPage {
	byClient := map[string][]activity{}
	var clients []string
	for i := range conns {
		c := &conns[i]
		if c.HTTP == nil || len(c.HTTP.Exchanges) == 0 {
			continue
		}
		client := c.A
		if ap, err := netip.ParseAddrPort(c.A); err == nil {
			client = ap.Addr().String()
		}
		if _, ok := byClient[client]; !ok {
			clients = append(clients, client)
		}
		for j := range c.HTTP.Exchanges {
			x := &c.HTTP.Exchanges[j]
			a := activity{conn: i, start: x.RequestS, end: x.RequestS, x: x, first: j == 0}
			if j == 0 {
				a.start = min(a.start, c.StartS)
			}
			switch {
			case x.CompleteMs > 0:
				a.end += x.CompleteMs / 1e3
			case x.TTFBMs > 0:
				a.end += x.TTFBMs / 1e3
			}
			byClient[client] = append(byClient[client], a)
		}
	}
	sort.Strings(clients)
	var pages []model.HTTPPage
	for _, cl := range clients {
		acts := byClient[cl]
		sort.SliceStable(acts, func(i, j int) bool { return acts[i].start < acts[j].start })
		for i := 0; i < len(acts); {
			end := acts[i].end
			j := i + 1
			for j < len(acts) && acts[j].start <= end+gap {
				end = max(end, acts[j].end)
				j++
			}
			pages = append(pages, page(cl, conns, acts[i:j]))
			i = j
		}
	}
	return pages
}

func page(client string, conns []model.TCPConn, acts []activity) model.HTTPPage {
	p := model.HTTPPage{Client: client, StartS: acts[0].start}
	type span struct{ lo, hi float64 }
	spans := map[int]*span{}
	hosts := map[string]bool{}
	end, ttfb, nttfb := acts[0].end, 0.0, 0
	incomplete := map[int]bool{}
	for _, a := range acts {
		end = max(end, a.end)
		p.Requests++
		if a.x.CompleteMs > 0 {
			p.Responses++
		}
		p.RespBytes += a.x.RespBytes
		if a.x.TTFBMs > 0 {
			ttfb += a.x.TTFBMs
			nttfb++
		}
		if a.x.Host != "" {
			hosts[a.x.Host] = true
		}
		if s := spans[a.conn]; s != nil {
			s.lo, s.hi = min(s.lo, a.start), max(s.hi, a.end)
		} else {
			spans[a.conn] = &span{a.start, a.end}
		}
		if a.first && conns[a.conn].SawSYN {
			p.NewConns++
		}
		if conns[a.conn].HTTP.Incomplete != "" {
			incomplete[a.conn] = true
		}
	}
	p.CompletionS = end - p.StartS
	p.Connections = len(spans)
	p.Incomplete = len(incomplete)
	if nttfb > 0 {
		p.MeanTTFBMs = ttfb / float64(nttfb)
	}
	for h := range hosts {
		p.Hosts = append(p.Hosts, h)
	}
	slices.Sort(p.Hosts)
	// Maximum number of connections active at once: sweep over the
	// connections' spans within the page (an end before a start at the
	// same instant: back-to-back connections are not parallel).
	type ev struct {
		t float64
		d int
	}
	var evs []ev
	for _, s := range spans {
		evs = append(evs, ev{s.lo, 1}, ev{s.hi, -1})
	}
	sort.Slice(evs, func(i, j int) bool {
		if evs[i].t != evs[j].t {
			return evs[i].t < evs[j].t
		}
		return evs[i].d < evs[j].d
	})
	cur := 0
	for _, e := range evs {
		cur += e.d
		p.MaxParallel = max(p.MaxParallel, cur)
	}
	return p
}
