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
