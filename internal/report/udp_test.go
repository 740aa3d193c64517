package report

import (
	"strings"
	"testing"

	"github.com/sonde-project/sonde/internal/model"
)

// The text summary names the reflector's format and the replies it could
// not read, instead of reporting silence.
func TestUDPTextFormatAndUnparsed(t *testing.T) {
	res := &model.UDPResult{Flows: []model.UDPFlow{{Name: "probe", Sent: 150, ReflectorFormat: "twamp-light",
		UnparsedReplies: []model.UnparsedReplies{{Bytes: 38, Count: 150, Reason: "shorter than the 41-octet TWAMP-Light reflector packet"}}}}}
	var b strings.Builder
	if err := WriteUDPText(&b, res); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"speaks TWAMP-Light (RFC 5357", "150 replies of 38 bytes, not STAMP or TWAMP-Light"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
}
