// Command browserceiling serves a bare page that moves bytes over
// WebSockets or fetch from Web Workers and does nothing else: no sonde
// frames, probes, charts or TCP_INFO. bench/browser.sh runs it beside
// sonde's page to show how much of the browser's own ceiling the page
// reaches, which on a CPU-bound machine is the figure the page can be
// judged by (docs/browser.md, "Throughput").
//
//	browserceiling -addr 127.0.0.1:0
//
// prints "listening HOST:PORT" once it accepts connections. The page,
// /?mode=MODE&streams=N&duration=S, sets window.result to
// {"mode", "streams", "bps", "idle_pct"} when done; idle_pct is the
// machine's idle CPU share while the streams ran (/proc/stat). Modes: ws-down, ws-up (WebSocket,
// 256 KiB messages), fetch-down (a streamed response read with a BYOB
// reader), fetch-up (16 MiB Blob POSTs, back to back). Upload goodput is
// what the server received.
package main

import (
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

//go:embed page.html
var page []byte

//go:embed worker.js
var worker []byte

const (
	wsMessage  = 256 << 10
	maxSeconds = 60
)

type server struct {
	received atomic.Int64 // upload bytes, all streams
	upgrader websocket.Upgrader
}

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	flag.Parse()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "browserceiling: %v\n", err)
		os.Exit(1)
	}
	s := &server{upgrader: websocket.Upgrader{ReadBufferSize: 1 << 20, WriteBufferSize: 1 << 20}}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { serve(w, "text/html", page) })
	mux.HandleFunc("/worker.js", func(w http.ResponseWriter, _ *http.Request) { serve(w, "text/javascript", worker) })
	mux.HandleFunc("/received", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, s.received.Load()) })
	mux.HandleFunc("/cpu", cpuTimes)
	mux.HandleFunc("/ws", s.webSocket)
	mux.HandleFunc("/down", s.download)
	mux.HandleFunc("/up", s.upload)
	fmt.Printf("listening %s\n", ln.Addr())
	log.Fatal(http.Serve(ln, mux))
}

func serve(w http.ResponseWriter, typ string, body []byte) {
	w.Header().Set("Content-Type", typ)
	w.Write(body)
}

// seconds reads the duration parameter, bounded so no request runs on.
func seconds(r *http.Request) time.Duration {
	d, err := strconv.ParseFloat(r.URL.Query().Get("duration"), 64)
	if err != nil || d <= 0 || d > maxSeconds {
		d = 1
	}
	return time.Duration(d * float64(time.Second))
}

func (s *server) webSocket(w http.ResponseWriter, r *http.Request) {
	c, err := s.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer c.Close()
	if r.URL.Query().Get("dir") == "up" {
		c.SetReadDeadline(time.Now().Add(maxSeconds * time.Second))
		for {
			_, rd, err := c.NextReader()
			if err != nil {
				return
			}
			n, _ := io.Copy(io.Discard, rd)
			s.received.Add(n)
		}
	}
	buf := make([]byte, wsMessage)
	for end := time.Now().Add(seconds(r)); time.Now().Before(end); {
		if err := c.WriteMessage(websocket.BinaryMessage, buf); err != nil {
			return
		}
	}
	c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	// Wait for the page's close so the last messages are not reset away.
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	for _, _, err := c.NextReader(); err == nil; _, _, err = c.NextReader() {
	}
}

func (s *server) download(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/octet-stream")
	buf := make([]byte, 1<<20)
	for end := time.Now().Add(seconds(r)); time.Now().Before(end); {
		if _, err := w.Write(buf); err != nil {
			return
		}
	}
}

func (s *server) upload(w http.ResponseWriter, r *http.Request) {
	buf := make([]byte, 1<<20)
	for {
		n, err := r.Body.Read(buf)
		s.received.Add(int64(n))
		if err != nil {
			if !errors.Is(err, io.EOF) {
				http.Error(w, err.Error(), http.StatusBadRequest)
			}
			return
		}
	}
}

// cpuTimes answers "IDLE TOTAL": the machine's idle (with iowait) and total
// CPU time from /proc/stat, in clock ticks.
func cpuTimes(w http.ResponseWriter, _ *http.Request) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		http.Error(w, "unexpected /proc/stat", http.StatusInternalServerError)
		return
	}
	var idle, total int64
	for i, v := range f[1:9] { // user nice system idle iowait irq softirq steal
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			http.Error(w, "unexpected /proc/stat", http.StatusInternalServerError)
			return
		}
		total += n
		if i == 3 || i == 4 {
			idle += n
		}
	}
	fmt.Fprintf(w, "%d %d", idle, total)
}
