package lab

import (
	"fmt"
	"io"
	"math"
	"runtime"
	"strconv"
	"strings"

	"github.com/sonde-project/sonde/internal/model"
)

// ErrUnsupported is what the lab's commands return where they cannot
// run: labs are built of Linux's network namespaces and TUN devices.
var ErrUnsupported = fmt.Errorf("not supported on %s: network namespaces and TUN devices are Linux's", runtime.GOOS)

// ServerPort is the port of the sonde server a Rerun starts in the lab.
const ServerPort = "8080"

// Rerun is a command run across a lab (`sonde test --lab`, `sonde mbm
// --lab`, `sonde rpm --lab`): the lab is built, `sonde serve` runs in its
// server namespace and the command itself runs again in its client
// namespace against that server. What differs between the commands is
// only the lab server's flags and the client's arguments.
type Rerun struct {
	Profile Profile
	// Self is the sonde executable both are run from ("": this program).
	Self string
	// ServeArgs are flags of the lab's `sonde serve` beyond its address.
	ServeArgs []string
	// Args are the command's own arguments (os.Args[1:]); the client
	// gets them less --lab and its value (WithoutLab), then the server's
	// address and --ground-truth FILE, then ClientArgs(truth) if set.
	Args       []string
	ClientArgs func(truth model.GroundTruth) []string
	// Log gets the lab's notes and the server's stderr (os.Stderr).
	Log io.Writer
}

// WithoutLab is a command's arguments without --lab and its value: the
// client a Rerun starts in the lab runs the same command against the
// lab's server.
func WithoutLab(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--lab":
			i++ // and its value
		case strings.HasPrefix(a, "--lab="):
		default:
			out = append(out, a)
		}
	}
	return out
}

// TestClientArgs are `sonde test`'s further arguments in a lab whose
// configured path is truth: the lab's link rates and no layer 2 overhead
// (the emulator serialises IP packets), each unless given (by flag name).
func TestClientArgs(truth model.GroundTruth, given func(flag string) bool) []string {
	var out []string
	isRate := func(v float64) bool { return v > 0 && !math.IsInf(v, 0) }
	if !given("link-rate") && isRate(truth.DownRateBps) {
		out = append(out, "--link-rate", strconv.FormatFloat(truth.DownRateBps, 'f', -1, 64))
		if !given("up-link-rate") && isRate(truth.UpRateBps) {
			out = append(out, "--up-link-rate", strconv.FormatFloat(truth.UpRateBps, 'f', -1, 64))
		}
	}
	if !given("wire-overhead") {
		out = append(out, "--wire-overhead", "0")
	}
	return out
}
