package main

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/report"
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
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "client\tstart s\tcompletion s\tconns\tnew\tmax parallel\trequests\tresponses\tresponse bytes\tmean TTFB ms\tincomplete")
		for _, p := range r.HTTPPages {
			fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%d\t%d\t%d\t%d\t%d\t%d\t%.1f\t%d\n", p.Client, p.StartS, p.CompletionS, p.Connections,
				p.NewConns, p.MaxParallel, p.Requests, p.Responses, p.RespBytes, p.MeanTTFBMs, p.Incomplete)
		}
		tw.Flush()
	}
	fmt.Fprintln(w, "\nHTTP/1.x connections")
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "client > server\tversion\trequests\tresponses\tpipelined\tkeep-alive\tclosed by\tidle before close s\tincomplete")
	for _, c := range conns {
		h := c.HTTP
		by := "-"
		if h.CloseBy != "" {
			by = h.CloseBy + " (" + h.CloseHow + ")"
		}
		fmt.Fprintf(tw, "%s > %s\t%s\t%d\t%d\t%d\t%v\t%s\t%.3f\t%s\n", c.A, c.B, h.Version, h.Requests, h.Responses,
			h.Pipelined, h.KeepAlive, by, h.IdleBeforeCloseS, httpDash(h.Incomplete))
	}
	tw.Flush()
	fmt.Fprintln(w, "\nHTTP requests (TTFB: request's first byte → response's first byte at the observer)")
	tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "client\tat s\tmethod\thost\tpath\tstatus\tresponse bytes\tTTFB ms\tcomplete ms\tkeep-alive")
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
			fmt.Fprintf(tw, "%s\t%.3f\t%s\t%s\t%s\t%d\t%d\t%.1f\t%.1f\t%v\n", c.A, x.RequestS, x.Method, httpDash(x.Host),
				strings.ReplaceAll(path, "\t", " "), x.Status, x.RespBytes, x.TTFBMs, x.CompleteMs, x.KeepAlive)
		}
	}
	tw.Flush()
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

func writeAnalyzeHTML(path string, res *model.Analysis, samples []model.PassiveRTT) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--html: %w", err)
	}
	if err := report.WriteAnalyzeHTML(f, res, samples, report.AnalyzeOptions{}); err != nil {
		f.Close()
		return fmt.Errorf("--html: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("--html: %w", err)
	}
	return nil
}
