// Command ndt7client runs N concurrent minimal ndt7 tests (m-lab's
// spec/ndt7-protocol.md) for bench/mixed_clients.sh: half downloads, half
// uploads, each one WebSocket that reads (or writes 8 KiB binary messages)
// until the server closes it or the test's 10 s are over. It prints one
// line per test and a summary: a test the server refused before the
// upgrade (429, 503) is "refused"; one it admitted "ok" when it moved data
// and ended with the server's Close, else "failed".
package main

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

const subprotocol = "net.measurementlab.ndt.v7"

func main() {
	base := flag.String("url", "", "server base URL: ws://HOST:PORT or wss://HOST:PORT")
	n := flag.Int("n", 1, "concurrent tests (1-1000)")
	insecure := flag.Bool("insecure", false, "accept any TLS certificate")
	rate := flag.Float64("rate", 0, "bits/s each test reads or writes at most, as a client behind a slower path (0: as fast as it can)")
	flag.Parse()
	if *base == "" || *n < 1 || *n > 1000 || *rate < 0 {
		fmt.Fprintln(os.Stderr, "usage: ndt7client -url ws[s]://HOST:PORT -n N [-insecure]")
		os.Exit(2)
	}
	d := websocket.Dialer{Subprotocols: []string{subprotocol}, HandshakeTimeout: 20 * time.Second,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: *insecure}}
	var wg sync.WaitGroup
	out := make([]string, *n)
	for i := range *n {
		kind := []string{"download", "upload"}[i%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = kind + " " + run(&d, *base+"/ndt/v7/"+kind, kind == "upload", *rate)
		}()
	}
	wg.Wait()
	counts := map[string]int{}
	for i, o := range out {
		fmt.Printf("ndt7 %d: %s\n", i, o)
		var k, v string
		fmt.Sscan(o, &k, &v)
		counts[v]++
	}
	fmt.Printf("ndt7 summary: ok %d refused %d failed %d\n", counts["ok"], counts["refused"], counts["failed"])
}

// run is one test: "ok BYTES", "refused STATUS" or "failed REASON".
func run(d *websocket.Dialer, url string, upload bool, rate float64) string {
	c, resp, err := d.Dial(url, nil)
	if err != nil {
		if resp != nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
			return fmt.Sprintf("refused %d", resp.StatusCode)
		}
		return "failed " + err.Error()
	}
	defer c.Close()
	start := time.Now()
	deadline := start.Add(15 * time.Second)
	// pace sleeps until moved bytes are within rate of the time since
	// start, for the test's 10 s: after them the rest is read at once, so
	// the server's Close is not left behind a backlog.
	pace := func(moved int64) {
		if rate > 0 && time.Since(start) < 10*time.Second {
			time.Sleep(time.Until(start.Add(time.Duration(float64(moved) * 8 / rate * float64(time.Second)))))
		}
	}
	_ = c.SetReadDeadline(deadline)
	var moved int64
	if upload {
		// The server's measurements and its Close arrive on the reader.
		done := make(chan error, 1)
		go func() {
			for {
				if _, _, err := c.ReadMessage(); err != nil {
					done <- err
					return
				}
			}
		}()
		msg := make([]byte, 8<<10)
		end := time.Now().Add(10 * time.Second)
		for time.Now().Before(end) {
			_ = c.SetWriteDeadline(deadline)
			if err := c.WriteMessage(websocket.BinaryMessage, msg); err != nil {
				break
			}
			moved += int64(len(msg))
			pace(moved)
		}
		_ = c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
		return verdict(<-done, moved)
	}
	for {
		_, m, err := c.ReadMessage()
		moved += int64(len(m))
		if err != nil {
			return verdict(err, moved)
		}
		pace(moved)
	}
}

func verdict(err error, moved int64) string {
	var ce *websocket.CloseError
	if errors.As(err, &ce) && ce.Code == websocket.CloseNormalClosure && moved > 0 {
		return fmt.Sprintf("ok %d", moved)
	}
	return fmt.Sprintf("failed %d bytes: %v", moved, err)
}
