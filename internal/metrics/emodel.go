package metrics

import (
	"math"

	"github.com/sonde-project/sonde/internal/model"
)

// The simplified E-model of ITU-T G.107 (metrics.md §10).

// G.711 impairment parameters: equipment impairment Ie and packet-loss
// robustness Bpl (G.113, random loss).
const (
	G711Ie  = 0.0
	G711Bpl = 4.3
)

// ERating returns the transmission rating R = 93.2 − Id − Ie_eff for a
// one-way (mouth-to-ear) delay in ms and a packet loss in percent, with
// Id = 0.024 d + 0.11 (d − 177.3) H(d − 177.3) and
// Ie_eff = Ie + (95 − Ie) · Ppl / (Ppl + Bpl). Negative delay or loss are
// taken as 0, loss above 100% as 100%.
func ERating(delayMs, lossPct, ie, bpl float64) float64 {
	d := math.Max(delayMs, 0)
	ppl := math.Min(math.Max(lossPct, 0), 100)
	id := 0.024 * d
	if d > 177.3 {
		id += 0.11 * (d - 177.3)
	}
	ieEff := ie
	if ppl > 0 {
		ieEff = ie + (95-ie)*ppl/(ppl+bpl)
	}
	return 93.2 - id - ieEff
}

// MOSFromR maps R to the mean opinion score (G.107 Annex B):
// 1 for R ≤ 0, 4.5 for R ≥ 100, else 1 + 0.035 R + 7·10⁻⁶ R (R − 60)(100 − R).
func MOSFromR(r float64) float64 {
	switch {
	case !(r > 0):
		return 1
	case r >= 100:
		return 4.5
	}
	return 1 + 0.035*r + 7e-6*r*(r-60)*(100-r)
}

// VoiceG711 estimates the voice quality of a G.711 call over a path with
// the given mouth-to-ear delay (ms) and effective packet loss (percent,
// losses plus packets too late for the jitter buffer).
func VoiceG711(delayMs, lossPct float64, assumption string) model.VoiceQuality {
	r := ERating(delayMs, lossPct, G711Ie, G711Bpl)
	return model.VoiceQuality{
		Codec: "G.711", DelayMs: delayMs, LossPct: lossPct,
		R: r, MOS: MOSFromR(r), Assumption: assumption,
	}
}
