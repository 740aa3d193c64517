package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sonde-project/sonde/internal/model"
)

// TestMBMLabRows: a run across a lab shows its profile and the configured
// path per direction in the header, in the text and the HTML, right after
// the target; a run without one shows no lab row.
func TestMBMLabRows(t *testing.T) {
	r := mbmFixture()
	var plain bytes.Buffer
	if err := WriteMBMText(&plain, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain.String(), "\nlab") {
		t.Errorf("a run without a lab shows a lab row:\n%s", plain.String())
	}

	r.Env = &model.MBMEnv{LabProfile: "adsl-codel"}
	r.Truth = &model.GroundTruth{Profile: "adsl-codel", BaseRTTMs: 19, MTU: 1500,
		UpRateBps: 0.7e6, UpLoss: 0.01, UpQueueBytes: 37625, UpQdisc: "codel",
		DownRateBps: 8e6, DownQueuePackets: 100, DownQdisc: "droptail"}
	var text, html bytes.Buffer
	if err := WriteMBMText(&text, r); err != nil {
		t.Fatal(err)
	}
	got := text.String()
	for _, want := range []string{
		"target        10.0 Mbit/s, RTT 50 ms, MTU 1500 B\nlab           profile \"adsl-codel\", base RTT 19.0 ms, MTU 1500 B\n",
		// 37625 B at 0.7 Mbit/s drain in 430 ms.
		"lab up        700.0 kbit/s, loss 1.00 %, queue 36.7 KiB (430.0 ms at the rate), codel (client → server",
		"lab down      8.0 Mbit/s, loss 0.00 %, queue 100 packets, droptail (server → client",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("text lacks %q:\n%s", want, got)
		}
	}
	if err := WriteMBMHTML(&html, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"adsl-codel", "430.0 ms at the rate", "lab down"} {
		if !strings.Contains(html.String(), want) {
			t.Errorf("html lacks %q", want)
		}
	}

	// An unlimited direction (profile wire) says so.
	r.Truth = &model.GroundTruth{Profile: "wire", MTU: 1500}
	text.Reset()
	if err := WriteMBMText(&text, r); err != nil {
		t.Fatal(err)
	}
	if want := "lab up        no rate limit, loss 0.00 % (client → server"; !strings.Contains(text.String(), want) {
		t.Errorf("text lacks %q:\n%s", want, text.String())
	}

	// A result that names a profile without its ground truth.
	r.Truth = nil
	text.Reset()
	if err := WriteMBMText(&text, r); err != nil {
		t.Fatal(err)
	}
	if want := "\nlab           profile \"adsl-codel\"\n"; !strings.Contains(text.String(), want) {
		t.Errorf("text lacks %q:\n%s", want, text.String())
	}
}
