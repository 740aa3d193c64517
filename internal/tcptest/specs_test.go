package tcptest

import (
	"testing"

	"github.com/sonde-project/sonde/internal/protocol"
)

// TestSpecsAutoStart pins the streams --streams auto opens at once: four
// per direction (as the browser page does), within the server's limit.
func TestSpecsAutoStart(t *testing.T) {
	for _, c := range []struct {
		phase         string
		maxCfg, maxSv int
		want          int
	}{
		{protocol.KindDownload, 16, 0, 4},
		{protocol.KindUpload, 16, 0, 4},
		{phaseBidir, 16, 0, 8},
		{protocol.KindDownload, 16, 4, 3}, // the probe stream takes one
		{phaseBidir, 16, 5, 4},
		{protocol.KindDownload, 2, 0, 2},
		{protocol.KindDownload, 16, 1, 1},
	} {
		tr := &tester{cfg: Config{MaxStreams: c.maxCfg}}
		tr.session.MaxStreams = c.maxSv
		specs, auto := tr.specs(c.phase)
		if !auto || len(specs) != c.want {
			t.Errorf("%s, max %d, server %d: %d specs (auto %v), want %d", c.phase, c.maxCfg, c.maxSv, len(specs), auto, c.want)
		}
	}
}
