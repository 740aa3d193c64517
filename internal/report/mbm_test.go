package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sonde-project/sonde/internal/model"
)

func mbmFixture() *model.MBMResult {
	return &model.MBMResult{Schema: model.MBMSchemaVersion, Subpath: "access",
		Target: model.MBMTarget{RateBps: 10e6, RTTMs: 50, MTUBytes: 1500, HeaderOverheadBytes: 52},
		Model:  model.MBMModel{WindowPackets: 44, RunLengthModel: "reference", RunLengthPackets: 5808, P0: 1.722e-4, P1: 6.887e-4},
		SPRT:   model.MBMSPRT{Alpha: 0.05, Beta: 0.05, MaxPackets: 60512},
		Tests: []model.MBMTest{
			{ID: "8.1.1", Name: "paced full data rate", Transport: "udp", Verdict: "PASS", Reason: "0 marks in 5698 packets reached the PASS line",
				Packets: 5698, LossHigh: 6.7e-4, UDP: &model.MBMUDP{Pattern: "1 packet every 1.2ms", PacketsSent: 5786, DecisionPackets: 5698,
					SenderRateBps: 10e6, SenderMinRateBps: 9.9e6, ReceiverRateBps: 10e6, ReceiverMinRateBps: 9.9e6, RateWindowMs: 1000,
					Deadlines: 5786, ScheduleErrorP50Us: 3, ScheduleErrorP99Us: 21, ScheduleErrorMaxUs: 80}},
			{ID: "8.5.1", Name: "sustained full-rate bursts", Transport: "udp", Verdict: "FAIL", Reason: "3 marks in 14 packets crossed the FAIL line",
				Packets: 14, Marks: 3, Losses: 3, Loss: 3.0 / 14, UDP: &model.MBMUDP{Derate: 1, BurstPackets: 44, Reordered: 2}},
		}}
}

func TestMBMRenderers(t *testing.T) {
	r := mbmFixture()
	var text, html, csv bytes.Buffer
	if err := WriteMBMText(&text, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"subpath access", "W 44 packets", "8.1.1 paced full data rate (udp): PASS", "SPRT decided at    5698 packets", "error p50 3 µs, p99 21 µs", "8.5.1 sustained full-rate bursts (udp): FAIL", "2 reordered"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	if err := WriteMBMHTML(&html, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(html.String(), `class="verdict bad"`) || !strings.Contains(html.String(), "sustained full-rate bursts") {
		t.Errorf("html lacks the FAIL")
	}
	if err := WriteMBMCSV(&csv, r); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(csv.String()), "\n"); len(lines) != 3 || !strings.HasPrefix(lines[2], "8.5.1,") {
		t.Errorf("csv: %q", csv.String())
	}
	// sonde report reads a saved run by its schema.
	b, _ := json.Marshal(r)
	s, err := Decode("run.json", b)
	if err != nil || s.Schema() != model.MBMSchemaVersion {
		t.Fatalf("decode: %v", err)
	}
}

// TestMBMTCPRows: a TCP test's rows, and 8.1.2's window readback.
func TestMBMTCPRows(t *testing.T) {
	r := mbmFixture()
	r.Tests = append(r.Tests, model.MBMTest{ID: "8.1.2", Name: "full data windowed rate", Transport: "tcp", Verdict: "PASS",
		TCP: &model.MBMTCP{CongestionControl: "cubic", MSS: 1448, GrowthS: 1.01, TestS: 1.2, GoodputBps: 9.74e6, WindowS: 1, Delivered: 952,
			WindowPackets: 18, ReceiveWindowBytes: 26064, ReceiveBufferSetBytes: 23026, ReceiveBufferBytes: 46052, WindowAttempts: 1,
			MaxSndWndBytes: 26064, MaxInFlight: 18, WindowSlackPackets: 2, ServerMaxRcvWndBytes: 26064, ServerBytes: 2764232,
			DeliveredPerRTT: 18.2, RTTSpans: 39, ShortRTTPct: 15}},
		model.MBMTest{ID: "8.4", Name: "sender rate bursts", Transport: "tcp", Verdict: "PASS",
			TCP: &model.MBMTCP{CongestionControl: "cubic", MSS: 1448, BurstPackets: 46, HeadwayMs: 53, Writes: 20, WholeBurstsPct: 100}})
	var text bytes.Buffer
	if err := WriteMBMText(&text, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"8.1.2 full data windowed rate (tcp): PASS", "cubic, MSS 1448 B, unpaced", "W 18 packets, 26064 B asked of the receiver; SO_RCVBUF 23026 set, 46052 held",
		"up to 26064 B advertised (tcpi_snd_wnd), 18 packets in flight", "server: up to 26064 B advertised (tcpi_rcv_wnd)", "18.2 packets delivered per RTT over 39 spans",
		"on-the-wire shape not observed"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	// The CSV has the TCP columns: filled for a TCP test, empty for a UDP one.
	var csv bytes.Buffer
	if err := WriteMBMCSV(&csv, r); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(csv.String()), "\n")
	if len(lines) != 5 || !strings.HasSuffix(lines[0], ",delivered_per_rtt") || !strings.HasSuffix(lines[1], ",,,,,,,,") ||
		!strings.HasSuffix(lines[3], ",cubic,9.74e+06,0,0,0,18,26064,18.2") {
		t.Errorf("csv:\n%s", csv.String())
	}
}
