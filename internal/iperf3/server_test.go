package iperf3

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"
)

// testServer is a Server on an ephemeral loopback port, TCP and UDP.
type testServer struct {
	*Server
	port  int
	mu    sync.Mutex
	tests []*Test
}

func startServer(t *testing.T, opts Options) *testServer {
	t.Helper()
	ts := &testServer{}
	if opts.Admit == nil {
		opts.Admit = func(net.Addr) (func(), error) { return func() {}, nil }
	}
	opts.Done = func(x *Test) {
		ts.mu.Lock()
		ts.tests = append(ts.tests, x)
		ts.mu.Unlock()
	}
	opts.Logf = t.Logf
	var ln net.Listener
	var pc *net.UDPConn
	for range 20 { // the UDP port may be taken by someone else: try another
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		pc, err = ListenUDP(l.Addr().String())
		if err == nil {
			ln = l
			break
		}
		l.Close()
	}
	if ln == nil {
		t.Fatal("no port free for both TCP and UDP")
	}
	ts.Server = NewServer(opts)
	ts.port = ln.Addr().(*net.TCPAddr).Port
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ts.Serve(ctx, ln, pc) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Error(err)
			}
		case <-time.After(30 * time.Second):
			t.Error("server did not stop")
		}
	})
	return ts
}

func (ts *testServer) records() []*Test {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([]*Test(nil), ts.tests...)
}

func needIperf3(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("iperf3")
	if err != nil {
		t.Skip("iperf3 is not installed (the Makefile installs Debian's): ", err)
	}
	return p
}

// iperfJSON is the part of iperf3 -J's output the tests read.
type iperfJSON struct {
	Start struct {
		TestStart struct {
			Protocol   string `json:"protocol"`
			NumStreams int    `json:"num_streams"`
			Omit       int    `json:"omit"`
			Duration   int    `json:"duration"`
			Reverse    int    `json:"reverse"`
			Bidir      int    `json:"bidir"`
			Bytes      int64  `json:"bytes"`
			Blksize    int    `json:"blksize"`
		} `json:"test_start"`
	} `json:"start"`
	Intervals []json.RawMessage `json:"intervals"`
	End       struct {
		Streams []struct {
			Sender   *iperfSum `json:"sender"`
			Receiver *iperfSum `json:"receiver"`
			UDP      *iperfSum `json:"udp"`
		} `json:"streams"`
		SumSent             *iperfSum `json:"sum_sent"`
		SumReceived         *iperfSum `json:"sum_received"`
		SumSentBidir        *iperfSum `json:"sum_sent_bidir_reverse"`
		SumReceivedBidir    *iperfSum `json:"sum_received_bidir_reverse"`
		Sum                 *iperfSum `json:"sum"`
		CPU                 struct {
			RemoteTotal float64 `json:"remote_total"`
		} `json:"cpu_utilization_percent"`
		SenderTCPCongestion   string `json:"sender_tcp_congestion"`
		ReceiverTCPCongestion string `json:"receiver_tcp_congestion"`
	} `json:"end"`
	ServerOutputText string          `json:"server_output_text"`
	ServerOutputJSON json.RawMessage `json:"server_output_json"`
	Error            string          `json:"error"`
}

type iperfSum struct {
	Socket        int     `json:"socket"`
	Start         float64 `json:"start"`
	End           float64 `json:"end"`
	Seconds       float64 `json:"seconds"`
	Bytes         int64   `json:"bytes"`
	BitsPerSecond float64 `json:"bits_per_second"`
	Retransmits   *int64  `json:"retransmits"`
	Jitter        float64 `json:"jitter_ms"`
	LostPackets   int64   `json:"lost_packets"`
	Packets       int64   `json:"packets"`
	LostPercent   float64 `json:"lost_percent"`
	OutOfOrder    int64   `json:"out_of_order"`
	Sender        bool    `json:"sender"`
}

// runIperf3 runs the iperf3 client with -J against port, bounded in time.
func runIperf3(t *testing.T, port int, limit time.Duration, args ...string) (iperfJSON, error) {
	t.Helper()
	bin := needIperf3(t)
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	all := append([]string{"-c", "127.0.0.1", "-p", strconv.Itoa(port), "-J", "--connect-timeout", "5000"}, args...)
	cmd := exec.CommandContext(ctx, bin, all...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err := cmd.Run()
	var res iperfJSON
	if jerr := json.Unmarshal(out.Bytes(), &res); jerr != nil {
		return res, fmt.Errorf("iperf3 %v: %v; output %q %q", all, errors.Join(err, jerr), out.String(), stderr.String())
	}
	if res.Error != "" {
		return res, fmt.Errorf("iperf3 %v: %s", all, res.Error)
	}
	if err != nil {
		return res, fmt.Errorf("iperf3 %v: %w (%s)", all, err, stderr.String())
	}
	return res, nil
}

func TestTCPUpload(t *testing.T) {
	ts := startServer(t, Options{})
	res, err := runIperf3(t, ts.port, 30*time.Second, "-t", "2")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("sent %.0f received %.0f bit/s", res.End.SumSent.BitsPerSecond, res.End.SumReceived.BitsPerSecond)
	if res.End.SumReceived.Bytes <= 0 {
		t.Fatalf("no bytes received: %+v", res.End)
	}
}
