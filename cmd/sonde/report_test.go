package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// runSonde runs the root command in-process and returns its stdout.
func runSonde(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return out.String(), err
}

func mustSonde(t *testing.T, args ...string) string {
	t.Helper()
	out, err := runSonde(t, args...)
	if err != nil {
		t.Fatalf("sonde %s: %v", strings.Join(args, " "), err)
	}
	return out
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The saved JSON is the source of truth: `sonde report` on a result saved
// with --json prints the text the run printed and writes the same HTML.
func TestReportReRendersRuns(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"test", []string{"test", "-t", "1s"}},
		{"udp", []string{"udp", "-t", "300ms", "-i", "10ms", "--timeout", "1s"}},
	} {
		js, page := filepath.Join(dir, tc.name+".json"), filepath.Join(dir, tc.name+".html")
		printed := mustSonde(t, append(tc.args, "--json", js, "--html", page)...)
		again := mustSonde(t, "report", js)
		if again != printed || printed == "" {
			t.Errorf("%s: re-rendered text differs from the run's:\n%s\nrun printed:\n%s", tc.name, again, printed)
		}
		pageAgain := filepath.Join(dir, tc.name+"-again.html")
		if out := mustSonde(t, "report", "--html", pageAgain, js); out != printed {
			t.Errorf("%s: --html FILE changed the text on stdout", tc.name)
		}
		if a, b := readFile(t, pageAgain), readFile(t, page); a != b {
			t.Errorf("%s: re-rendered HTML differs from the run's (%d vs %d bytes)", tc.name, len(a), len(b))
		}
		// With - the page alone goes to stdout.
		if out := mustSonde(t, "report", "--html", "-", js); out != readFile(t, page) {
			t.Errorf("%s: --html - is not the page alone", tc.name)
		}
		cmp := mustSonde(t, "report", js, js)
		if !strings.Contains(cmp, "#2 − #1") || !strings.Contains(cmp, "#1  "+js) {
			t.Errorf("%s: comparison:\n%s", tc.name, cmp)
		}
		csv := mustSonde(t, "report", "--csv", "-", js, js)
		if !strings.HasPrefix(csv, "figure,unit,"+js+","+js+"\n") || strings.Count(csv, "\n") < 3 {
			t.Errorf("%s: csv:\n%s", tc.name, csv)
		}
	}
}

// writeHTTPCapture writes a raw-IP capture of one TCP connection with a
// request and a response, built with gopacket's serializer.
func writeHTTPCapture(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := pcapgo.NewWriterNanos(f)
	if err := w.WriteFileHeader(65535, layers.LinkTypeRaw); err != nil {
		t.Fatal(err)
	}
	cli, srv := net.IPv4(198, 18, 7, 1), net.IPv4(198, 18, 7, 2)
	seq := map[bool]uint32{true: 1000, false: 9000}
	var ns int64 = 1_700_000_000_000_000_000
	for _, p := range []struct {
		fromClient    bool
		syn, ack, fin bool
		payload       string
		afterMs       int64
	}{
		{true, true, false, false, "", 0},
		{false, true, true, false, "", 30},
		{true, false, true, false, "", 30},
		{true, false, true, false, "GET /a HTTP/1.1\r\nHost: h\r\n\r\n", 1},
		{false, false, true, false, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", 40},
		{true, false, true, true, "", 10},
		{false, false, true, true, "", 30},
		{true, false, true, false, "", 30},
	} {
		ns += p.afterMs * 1e6
		ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolTCP, SrcIP: srv, DstIP: cli}
		tcp := &layers.TCP{SrcPort: 80, DstPort: 41000, SYN: p.syn, ACK: p.ack, FIN: p.fin, Window: 65535,
			Seq: seq[p.fromClient], Ack: seq[!p.fromClient]}
		if p.fromClient {
			ip.SrcIP, ip.DstIP, tcp.SrcPort, tcp.DstPort = cli, srv, 41000, 80
		}
		if err := tcp.SetNetworkLayerForChecksum(ip); err != nil {
			t.Fatal(err)
		}
		buf := gopacket.NewSerializeBuffer()
		if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
			ip, tcp, gopacket.Payload(p.payload)); err != nil {
			t.Fatal(err)
		}
		seq[p.fromClient] += uint32(len(p.payload))
		if p.syn || p.fin {
			seq[p.fromClient]++
		}
		b := buf.Bytes()
		ci := gopacket.CaptureInfo{Timestamp: time.Unix(0, ns), CaptureLength: len(b), Length: len(b)}
		if err := w.WritePacket(ci, b); err != nil {
			t.Fatal(err)
		}
	}
}

// An analysis re-renders to the text `sonde analyze` printed, but for its
// last line: the analyser's own speed, measured anew in every run.
func TestReportReRendersAnalysis(t *testing.T) {
	dir := t.TempDir()
	capture, js := filepath.Join(dir, "c.pcap"), filepath.Join(dir, "a.json")
	writeHTTPCapture(t, capture)
	printed := mustSonde(t, "analyze", capture)
	if err := os.WriteFile(js, []byte(mustSonde(t, "analyze", "--json", capture)), 0o644); err != nil {
		t.Fatal(err)
	}
	again := mustSonde(t, "report", js)
	trim := func(s string) string { return s[:strings.LastIndex(s, "\nanalysed at ")] }
	if !strings.Contains(printed, "HTTP/1.x connections") || !strings.Contains(again, "\nanalysed at ") || trim(again) != trim(printed) {
		t.Errorf("re-rendered analysis differs from the run's:\n%s\nrun printed:\n%s", again, printed)
	}
}

func TestReportBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	udp := write("u.json", `{"schema":"sonde.udp/v1","flows":[]}`)
	res := write("r.json", `{"schema":"sonde.result/v1"}`)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"report"}, "requires at least 1 arg"},
		{[]string{"report", filepath.Join(dir, "none.json")}, "no such file"},
		{[]string{"report", write("x.json", `{"schema":"sonde.mbm/v7"}`)}, `unknown schema "sonde.mbm/v7"`},
		{[]string{"report", write("n.json", `not json`)}, "not a saved sonde result"},
		{[]string{"report", udp, res}, "cannot compare results of different kinds"},
		{[]string{"report", "--html", "-", "--csv", "-", udp}, "would mix on stdout"},
		{[]string{"report", "--csv", filepath.Join(dir, "no", "dir.csv"), udp}, "--csv"},
	} {
		_, err := runSonde(t, tc.args...)
		var ee *exitError
		if err == nil || !errors.As(err, &ee) || ee.code != exitUsage || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want exit %d with %q", tc.args, err, exitUsage, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "no")); err == nil {
		t.Error("a failed run created an output directory")
	}
}
