package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/sonde-project/sonde/internal/model"
)

// maxHTTPTextRows bounds the request table of the text output (--json
// has them all).
const maxHTTPTextRows = 50

// writeHTTPText prints the HTTP/1.x page loads, connections and requests.
func writeHTTPText(w io.Writer, r *model.Analysis) {
	var conns []*model.TCPConn
	for i := range r.TCP {
		if r.TCP[i].HTTP != nil {
			conns = append(conns, &r.TCP[i])
		}
	}
	if len(conns) == 0 {
		return
	}
	sort.SliceStable(conns, func(i, j int) bool { return conns[i].StartS < conns[j].StartS })
	if len(r.HTTPPages) > 0 {
		fmt.Fprintln(w, "\nHTTP page loads (a client's exchanges less than 1 s apart)")
		var tb table
		tb.row("client", "start s", "completion s", "conns", "new", "max parallel", "requests", "responses", "response bytes", "mean TTFB ms", "incomplete")
		for _, p := range r.HTTPPages {
			tb.row(p.Client, fixed(p.StartS, 3), fixed(p.CompletionS, 3), fmt.Sprint(p.Connections), fmt.Sprint(p.NewConns),
				fmt.Sprint(p.MaxParallel), fmt.Sprint(p.Requests), fmt.Sprint(p.Responses), fmt.Sprint(p.RespBytes),
				fixed(p.MeanTTFBMs, 1), fmt.Sprint(p.Incomplete))
		}
		_ = tb.write(w)
	}
	fmt.Fprintln(w, "\nHTTP/1.x connections")
	var conTable table
	conTable.row("client > server", "version", "requests", "responses", "pipelined", "keep-alive", "closed by", "idle before close s", "incomplete")
	for _, c := range conns {
		h := c.HTTP
		by := "-"
		if h.CloseBy != "" {
			by = h.CloseBy + " (" + h.CloseHow + ")"
		}
		conTable.row(c.A+" > "+c.B, h.Version, fmt.Sprint(h.Requests), fmt.Sprint(h.Responses), fmt.Sprint(h.Pipelined),
			fmt.Sprint(h.KeepAlive), by, fixed(h.IdleBeforeCloseS, 3), httpDash(h.Incomplete))
	}
	_ = conTable.write(w)
	fmt.Fprintln(w, "\nHTTP requests (TTFB: request's first byte → response's first byte at the observer)")
	var reqTable table
	reqTable.row("client", "at s", "method", "host", "path", "status", "response bytes", "TTFB ms", "complete ms", "keep-alive")
	n, total := 0, 0
	for _, c := range conns {
		for _, x := range c.HTTP.Exchanges {
			total++
			if n >= maxHTTPTextRows {
				continue
			}
			n++
			path := x.Path
			if len(path) > 60 {
				path = path[:57] + "..."
			}
			reqTable.row(c.A, fixed(x.RequestS, 3), x.Method, httpDash(x.Host), strings.ReplaceAll(path, "\t", " "),
				fmt.Sprint(x.Status), fmt.Sprint(x.RespBytes), fixed(x.TTFBMs, 1), fixed(x.CompleteMs, 1), fmt.Sprint(x.KeepAlive))
		}
	}
	_ = reqTable.write(w)
	if total > n {
		fmt.Fprintf(w, "(first %d of %d requests; --json has them all)\n", n, total)
	}
}

func httpDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
