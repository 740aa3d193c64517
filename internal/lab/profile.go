package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/sonde-project/sonde/internal/emulator"
	"github.com/sonde-project/sonde/internal/model"
)

// Scenario is a topology in its file form (JSON): a chain of links from
// the client to the server, each given as emulator specifications (see
// emulator.ParseParams). Built-in profiles are scenarios too.
//
//	{"name": "adsl", "links": [{"up": "rate=0.7Mbit delay=9.5ms limit=301kbit",
//	                            "down": "rate=8Mbit delay=9.5ms limit=263KB"}]}
type Scenario struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Source      string `json:"source,omitempty"`
	// MTU of the nodes' interfaces (default 1500); a link's own mtu= may
	// be smaller, and path MTU discovery then runs across it.
	MTU   int            `json:"mtu,omitempty"`
	Links []ScenarioLink `json:"links"`
}

// ScenarioLink is one link: Both applies to both directions, then Up
// (client → server) and Down add to it. Schedules are "TIME:SETTINGS"
// steps; Schedule applies to both directions.
type ScenarioLink struct {
	Name         string   `json:"name,omitempty"`
	Both         string   `json:"both,omitempty"`
	Up           string   `json:"up,omitempty"`
	Down         string   `json:"down,omitempty"`
	Schedule     []string `json:"schedule,omitempty"`
	UpSchedule   []string `json:"up_schedule,omitempty"`
	DownSchedule []string `json:"down_schedule,omitempty"`
}

// Profile is a parsed, validated topology.
type Profile struct {
	Name        string
	Description string
	Source      string
	MTU         int
	Links       []Link
}

// Link is one parsed link of a profile.
type Link struct {
	Name                     string
	Up, Down                 emulator.Params
	UpSchedule, DownSchedule []emulator.Step
}

// builtin are the profiles `sonde lab up NAME` knows, each with the
// document its figures come from.
var builtin = []Scenario{
	{
		Name:        "fiber",
		Description: "fibre access, 100/100 Mbit/s, 5 ms base RTT, 1000-packet drop-tail buffers",
		Source:      "sonde issue \"sonde lab\" (example figures); buffer = Linux default txqueuelen",
		Links:       []ScenarioLink{{Both: "rate=100Mbit delay=2.5ms limit=1000p"}},
	},
	{
		Name: "adsl",
		Description: "bufferbloated ADSL line, 8 Mbit/s down / 0.7 Mbit/s up, 19 ms base RTT, " +
			"uplink buffer 301 kbit (≈430 ms at 0.7 Mbit/s), downlink buffer 263 ms at 8 Mbit/s, drop-tail",
		Source: "seed 001 (Telenor \"Bredbånd 8\", Rindadalsvegen 30): plan 8/0.7 Mbit/s, idle median RTT 19 ms, " +
			"430 ms of queueing at 700 kbit/s ⇒ 301 kbit uplink buffer; first hop 263 ms under download saturation",
		Links: []ScenarioLink{{
			Up:   "rate=0.7Mbit delay=9.5ms limit=301kbit",
			Down: "rate=8Mbit delay=9.5ms limit=263000B",
		}},
	},
	{
		Name: "adsl-codel",
		Description: "the adsl line with CoDel (target 5 ms, interval 100 ms) on the uplink instead of drop-tail: " +
			"same rates, delays and buffer limits",
		Source: "seed 001's line (profile adsl) with the AQM the issue's lab proof asks for (sonde issue 13: " +
			"\"the same scenario with CoDel or FQ-CoDel on the link must be classed AQM/FQ\")",
		Links: []ScenarioLink{{
			Up:   "rate=0.7Mbit delay=9.5ms limit=301kbit qdisc=codel",
			Down: "rate=8Mbit delay=9.5ms limit=263000B",
		}},
	},
	{
		Name: "adsl-fqcodel",
		Description: "the adsl line with FQ-CoDel (1024 flow queues, CoDel per queue) on the uplink instead of drop-tail: " +
			"same rates, delays and buffer limits",
		Source: "seed 001's line (profile adsl) with the flow-queueing AQM the issue's lab proof asks for (sonde issue 13)",
		Links: []ScenarioLink{{
			Up:   "rate=0.7Mbit delay=9.5ms limit=301kbit qdisc=fq_codel",
			Down: "rate=8Mbit delay=9.5ms limit=263000B",
		}},
	},
	{
		Name:        "ftth",
		Description: "fibre to the home, 60/60 Mbit/s, 9 ms base RTT, buffer ≈ 1 BDP (no bufferbloat found)",
		Source: "seed 001 (NTE \"Internet 120\", Tistelvegen 24): 60/60 Mbit/s plan; ping to NIX Oslo 9 ms; " +
			"no conclusive evidence of bufferbloat, so a BDP-sized buffer (60 Mbit/s × 9 ms ≈ 68 kB)",
		Links: []ScenarioLink{{Both: "rate=60Mbit delay=4.5ms limit=68KB"}},
	},
	{
		Name:        "lte",
		Description: "LTE-like cell: rate and delay change every 10 s (down 30→12→45→20 Mbit/s, up 10→4→15→6), 2× 20 ms ± 4 ms (normal, order-preserving) base delay",
		Source:      "illustrative (no seed measures LTE): typical urban LTE figures; variability exercises the schedule",
		Links: []ScenarioLink{{
			Both: "delay=20ms jitter=4ms dist=normal limit=500p",
			Up:   "rate=10Mbit", Down: "rate=30Mbit",
			UpSchedule: []string{"10s:rate=4Mbit delay=30ms", "20s:rate=15Mbit delay=18ms", "30s:rate=6Mbit delay=25ms",
				"40s:rate=10Mbit delay=20ms", "50s:rate=4Mbit delay=30ms", "60s:rate=15Mbit delay=18ms", "70s:rate=10Mbit delay=20ms"},
			DownSchedule: []string{"10s:rate=12Mbit delay=30ms", "20s:rate=45Mbit delay=18ms", "30s:rate=20Mbit delay=25ms",
				"40s:rate=30Mbit delay=20ms", "50s:rate=12Mbit delay=30ms", "60s:rate=45Mbit delay=18ms", "70s:rate=30Mbit delay=20ms"},
		}},
	},
	{
		Name:        "satellite-geo-fast",
		Description: "geostationary satellite, 544 kbit/s each way, 1200 ms RTT, 4% loss each way, 50-slot queue",
		Source:      "seed 003 (dummynet \"fast satellite\": ipfw pipe config bw 544Kbit/s, 1200 ms RTT, plr 0.04); queue = dummynet default 50 slots",
		Links:       []ScenarioLink{{Both: "rate=544kbit delay=600ms loss=0.04 limit=50p"}},
	},
	{
		Name:        "satellite-geo-slow",
		Description: "geostationary satellite, 136 kbit/s each way, 2000 ms RTT, 4% loss each way, 50-slot queue",
		Source: "seed 003 (dummynet \"slow satellite\": 136Kbit/s, 2000 ms RTT, plr 0.04; the appendix pipe config " +
			"says delay 500 ms per pipe, i.e. 1000 ms RTT — use a scenario file for that variant)",
		Links: []ScenarioLink{{Both: "rate=136kbit delay=1000ms loss=0.04 limit=50p"}},
	},
	{
		Name: "interconnect",
		Description: "a short 10 Mbit/s interconnection bottleneck (1 ms, 0.1% loss, 100-packet queue) between two " +
			"long 100 Mbit/s access paths (20 ms each way): 2 routers, 3 links",
		Source: "seed 002 (Model Based Metrics, RFC 8337 interconnection example, fig. 4-1: hosts a-b-c-d, " +
			"link b-c the bottleneck with a short RTT inside a long path; 100 Mbit/s links, 1500 B MTU)",
		Links: []ScenarioLink{
			{Name: "access-a", Both: "rate=100Mbit delay=20ms limit=1000p"},
			{Name: "interconnect", Both: "rate=10Mbit delay=1ms loss=0.001 limit=100p"},
			{Name: "access-d", Both: "rate=100Mbit delay=20ms limit=1000p"},
		},
	},
	{
		Name:        "lan-10ms",
		Description: "1 Gbit/s LAN with 10 ms added RTT, buffer = 1 BDP (1.25 MB)",
		Source:      "seed 000 (browser tests on a 1 GbE path with added 10 and 20 ms RTT; iperf max 949 Mbit/s)",
		Links:       []ScenarioLink{{Both: "rate=1Gbit delay=5ms limit=1250KB"}},
	},
	{
		Name:        "lan-20ms",
		Description: "1 Gbit/s LAN with 20 ms added RTT, buffer = 1 BDP (2.5 MB)",
		Source:      "seed 000 (browser tests on a 1 GbE path with added 10 and 20 ms RTT; iperf max 949 Mbit/s)",
		Links:       []ScenarioLink{{Both: "rate=1Gbit delay=10ms limit=2500KB"}},
	},
	{
		Name:        "wire",
		Description: "unimpaired: no rate limit, no delay, no loss (for benchmarks and as a reference)",
		Source:      "none",
		Links:       []ScenarioLink{{Both: "limit=10000p"}},
	},
}

// Names lists the built-in profiles.
func Names() []string {
	var n []string
	for _, s := range builtin {
		n = append(n, s.Name)
	}
	sort.Strings(n)
	return n
}

// Builtin returns the scenarios of every built-in profile.
func Builtin() []Scenario { return append([]Scenario(nil), builtin...) }

// ErrUnknownProfile is returned for a name that is neither a built-in
// profile nor a scenario file.
var ErrUnknownProfile = errors.New("unknown lab profile")

// Resolve finds a profile by built-in name, or loads a scenario file when
// the argument names one (contains a slash or ends in .json).
func Resolve(nameOrFile string) (Profile, error) {
	for _, s := range builtin {
		if s.Name == nameOrFile {
			return s.Parse()
		}
	}
	if strings.Contains(nameOrFile, "/") || strings.HasSuffix(nameOrFile, ".json") {
		return LoadScenario(nameOrFile)
	}
	return Profile{}, fmt.Errorf("%w %q; valid profiles: %s (or a scenario .json file)", ErrUnknownProfile, nameOrFile, strings.Join(Names(), ", "))
}

// LoadScenario reads and parses a scenario file.
func LoadScenario(path string) (Profile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Profile{}, fmt.Errorf("scenario: %w", err)
	}
	var s Scenario
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return Profile{}, fmt.Errorf("scenario %s: %w", path, err)
	}
	if s.Name == "" {
		s.Name = strings.TrimSuffix(path[strings.LastIndex(path, "/")+1:], ".json")
	}
	p, err := s.Parse()
	if err != nil {
		return Profile{}, fmt.Errorf("scenario %s: %w", path, err)
	}
	return p, nil
}

// MaxLinks bounds a chain (each link gets a /24 of 198.18.0.0/15).
const MaxLinks = 16

// Parse validates a scenario into a profile.
func (s Scenario) Parse() (Profile, error) {
	p := Profile{Name: s.Name, Description: s.Description, Source: s.Source, MTU: s.MTU}
	if p.MTU == 0 {
		p.MTU = 1500
	}
	if p.MTU < 576 || p.MTU > 65535 {
		return p, fmt.Errorf("node mtu %d outside [576, 65535]", p.MTU)
	}
	if len(s.Links) == 0 || len(s.Links) > MaxLinks {
		return p, fmt.Errorf("a scenario needs 1 to %d links, has %d", MaxLinks, len(s.Links))
	}
	for i, sl := range s.Links {
		l := Link{Name: sl.Name}
		if l.Name == "" {
			l.Name = fmt.Sprintf("link%d", i+1)
		}
		both, err := emulator.ParseParams(sl.Both, emulator.Params{})
		if err != nil {
			return p, fmt.Errorf("link %s: %w", l.Name, err)
		}
		if l.Up, err = emulator.ParseParams(sl.Up, both); err != nil {
			return p, fmt.Errorf("link %s up: %w", l.Name, err)
		}
		if l.Down, err = emulator.ParseParams(sl.Down, both); err != nil {
			return p, fmt.Errorf("link %s down: %w", l.Name, err)
		}
		if l.Up.HalfDuplex != l.Down.HalfDuplex {
			return p, fmt.Errorf("link %s: duplex=half shares one medium between the two directions: set it in \"both\"", l.Name)
		}
		if l.UpSchedule, err = emulator.ParseSchedule(append(append([]string(nil), sl.Schedule...), sl.UpSchedule...), l.Up); err != nil {
			return p, fmt.Errorf("link %s up: %w", l.Name, err)
		}
		if l.DownSchedule, err = emulator.ParseSchedule(append(append([]string(nil), sl.Schedule...), sl.DownSchedule...), l.Down); err != nil {
			return p, fmt.Errorf("link %s down: %w", l.Name, err)
		}
		p.Links = append(p.Links, l)
	}
	return p, nil
}

// GroundTruth summarises a profile end to end, at time 0 of its
// schedules: base RTT from the propagation delays (serialisation not
// included), bottleneck rate per direction, combined random loss (BER at
// 1500-byte packets), and the bottleneck link's queue limit.
func (p Profile) GroundTruth() model.GroundTruth {
	g := model.GroundTruth{Profile: p.Name, MTU: p.MTU}
	upKeep, downKeep := 1.0, 1.0
	upRate, downRate := math.Inf(1), math.Inf(1)
	for _, l := range p.Links {
		g.BaseRTTMs += float64(l.Up.Delay+l.Down.Delay) / float64(time.Millisecond)
		upKeep *= 1 - meanLoss(l.Up)
		downKeep *= 1 - meanLoss(l.Down)
		if r := l.Up.RateBps; r > 0 && r < upRate {
			upRate = r
			g.UpQueueBytes, g.UpQueuePackets = l.Up.LimitBytes, l.Up.LimitPackets
			g.UpQdisc = string(qdiscName(l.Up))
		}
		if r := l.Down.RateBps; r > 0 && r < downRate {
			downRate = r
			g.DownQueueBytes, g.DownQueuePackets = l.Down.LimitBytes, l.Down.LimitPackets
			g.DownQdisc = string(qdiscName(l.Down))
		}
		if l.Up.MTU > 0 && l.Up.MTU < g.MTU {
			g.MTU = l.Up.MTU
		}
		if l.Down.MTU > 0 && l.Down.MTU < g.MTU {
			g.MTU = l.Down.MTU
		}
	}
	if !math.IsInf(upRate, 1) {
		g.UpRateBps = upRate
	}
	if !math.IsInf(downRate, 1) {
		g.DownRateBps = downRate
	}
	g.UpLoss, g.DownLoss = 1-upKeep, 1-downKeep
	return g
}

func qdiscName(p emulator.Params) emulator.Qdisc {
	if p.Qdisc == "" {
		return emulator.DropTail
	}
	return p.Qdisc
}

func meanLoss(p emulator.Params) float64 {
	keep := 1 - p.Loss
	if p.GE != nil {
		keep *= 1 - p.GE.MeanLoss()
	}
	if p.BER > 0 {
		keep *= 1 - emulator.BERLoss(p.BER, 1500)
	}
	return 1 - keep
}
