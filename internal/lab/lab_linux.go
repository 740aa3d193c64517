//go:build linux

package lab

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sonde-project/sonde/internal/emulator"
	"github.com/sonde-project/sonde/internal/emulator/forward"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/netns"
)

// NSPrefix starts the name of every namespace a lab makes.
const NSPrefix = netns.Prefix + "lab-"

// Options tune a lab.
type Options struct {
	// Seed makes the random processes reproducible; 0 picks one at random
	// (it is recorded in the ground-truth header and the state file).
	Seed uint64
	// TruthPath, if set, receives the ground-truth records of every link.
	TruthPath string
	// CaptureDir, if set, receives one pcapng file per link (both ends).
	CaptureDir string
	// StateDir holds the state file (default DefaultStateDir).
	StateDir string
	// Spin is the forwarder's busy-wait before deadlines (0: default).
	Spin time.Duration
	// RealTime asks for SCHED_FIFO forwarding threads (forward.Config).
	// Off by default: measured on a loaded 2-core VM, it made stalls worse
	// (up to 150 ms, priority inversion with the Go runtime and the
	// kernel's network work) instead of better (≤ 4 ms without it).
	RealTime bool
	// AllowCPUIdle lets idle CPUs halt while the lab forwards
	// (forward.Config): less power, tens of µs more delay per packet.
	AllowCPUIdle bool
	// LogPath, if set, is this process's output file (a detached lab's
	// DetachedLog): recorded in the state file so that clean removes it
	// with the lab.
	LogPath string
}

// DefaultStateDir is where running labs are recorded.
const DefaultStateDir = "/run/sonde/lab"

// Node names.
const (
	Client = "client"
	Server = "server"
)

// Lab is a running topology.
type Lab struct {
	ID      string
	Profile Profile
	Seed    uint64
	Start   time.Time

	nodes    []*node
	links    []*EmuLink
	truth    *emulator.TruthWriter
	state    string
	stateDir string
	log      string
}

type node struct {
	name string // client, router-N, server
	ns   *netns.NS
	addr string // main address
}

// Up builds the profile named nameOrFile (see Resolve) and starts
// forwarding. It needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN).
func Up(ctx context.Context, nameOrFile string, opts Options) (*Lab, error) {
	p, err := Resolve(nameOrFile)
	if err != nil {
		return nil, err
	}
	return UpProfile(ctx, p, opts)
}

// UpProfile builds a parsed profile. On error, everything made so far is
// removed.
func UpProfile(ctx context.Context, p Profile, opts Options) (l *Lab, err error) {
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("sonde lab: %w", netns.ErrNotRoot)
	}
	if len(p.Links) == 0 || len(p.Links) > MaxLinks {
		return nil, fmt.Errorf("sonde lab: profile %q has %d links (1 to %d)", p.Name, len(p.Links), MaxLinks)
	}
	var id [3]byte
	_, _ = rand.Read(id[:])
	l = &Lab{ID: hex.EncodeToString(id[:]), Profile: p, Seed: opts.Seed, stateDir: opts.StateDir, log: opts.LogPath}
	if l.Seed == 0 {
		l.Seed = RandomSeed()
	}
	if l.stateDir == "" {
		l.stateDir = DefaultStateDir
	}
	defer func() {
		if err != nil {
			_ = l.Down()
			l = nil
		}
	}()
	if err := l.makeNodes(ctx); err != nil {
		return l, err
	}
	l.Start = time.Now()
	if opts.TruthPath != "" {
		if err := l.openTruth(opts.TruthPath); err != nil {
			return l, err
		}
	}
	for i := range p.Links {
		if err := l.makeLink(i, opts); err != nil {
			return l, fmt.Errorf("sonde lab: link %d: %w", i+1, err)
		}
	}
	if err := l.writeState(); err != nil {
		return l, err
	}
	return l, nil
}

func (l *Lab) nsName(node string) string { return NSPrefix + l.ID + "-" + node }

func (l *Lab) makeNodes(ctx context.Context) error {
	n := len(l.Profile.Links)
	names := []string{Client}
	for i := 1; i < n; i++ {
		names = append(names, "router-"+strconv.Itoa(i))
	}
	names = append(names, Server)
	for i, name := range names {
		if err := ctx.Err(); err != nil {
			return err
		}
		ns, err := netns.Add(l.nsName(name))
		if err != nil {
			return fmt.Errorf("sonde lab: %w", err)
		}
		nd := &node{name: name, ns: ns}
		l.nodes = append(l.nodes, nd)
		// IPv4 only (198.18.0.0/15): no IPv6 router solicitations or MLD
		// reports in the captures and the ground truth.
		for _, kv := range [][2]string{
			{"net.ipv6.conf.all.disable_ipv6", "1"},
			{"net.ipv6.conf.default.disable_ipv6", "1"},
		} {
			if err := ns.Sysctl(kv[0], kv[1]); err != nil {
				return fmt.Errorf("sonde lab: %w", err)
			}
		}
		if i > 0 && i < len(names)-1 {
			if err := ns.Sysctl("net.ipv4.ip_forward", "1"); err != nil {
				return fmt.Errorf("sonde lab: %w", err)
			}
		}
	}
	l.nodes[0].addr = linkAddr(1, 1).String()
	l.nodes[len(l.nodes)-1].addr = linkAddr(n, 2).String()
	for i := 1; i < n; i++ {
		l.nodes[i].addr = linkAddr(i, 2).String()
	}
	return nil
}

func (l *Lab) openTruth(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("sonde lab: truth file: %w", err)
	}
	h := emulator.TruthHeader{StartUnixNs: l.Start.UnixNano(), Seed: l.Seed, Profile: l.Profile.Name}
	for i, pl := range l.Profile.Links {
		h.Links = append(h.Links, emulator.TruthLink{
			Name: pl.Name, A: l.nodes[i].name, B: l.nodes[i+1].name,
			Up: pl.Up, Down: pl.Down, UpSchedule: pl.UpSchedule, DownSchedule: pl.DownSchedule,
		})
	}
	w, err := emulator.NewTruthWriter(f, h)
	if err != nil {
		f.Close()
		return fmt.Errorf("sonde lab: %w", err)
	}
	l.truth = w
	return nil
}

// makeLink creates link i's two TUN devices, moves them into the nodes on
// either side, addresses and routes them, and starts forwarding.
func (l *Lab) makeLink(i int, opts Options) error {
	pl := l.Profile.Links[i]
	a, b := l.nodes[i], l.nodes[i+1]
	n := len(l.Profile.Links)
	ends := make([]LinkEnd, 2)
	for k, e := range []struct {
		nd   *node
		host int
	}{{a, 1}, {b, 2}} {
		// Device names: "sonde" + lab id + link number + end, ≤ 15 bytes.
		name := fmt.Sprintf("%s%s%d%c", netns.Prefix, l.ID, i+1, 'a'+k)
		end := LinkEnd{NS: e.nd.ns, Dev: name, Addr: netip.PrefixFrom(linkAddr(i+1, e.host), 24), Label: e.nd.name}
		// Routes to the subnets beyond this end.
		for j := 1; j <= n; j++ {
			if (e.host == 1 && j < i+1) || (e.host == 2 && j > i+1) {
				continue
			}
			if j == i+1 {
				continue
			}
			end.Routes = append(end.Routes, []string{"route", "add", fmt.Sprintf("198.%d.%d.0/24", 18+j>>8, j&255), "dev", name})
		}
		if e.nd.name == Client || e.nd.name == Server {
			// ICMP errors from link routers and anything else in the lab.
			end.Routes = append(end.Routes, []string{"route", "add", "198.18.0.0/15", "dev", name, "metric", "100"})
		}
		ends[k] = end
	}
	lk, err := CreateEmuLink(ends[0], ends[1], l.Profile.MTU)
	l.links = append(l.links, lk)
	if err != nil {
		return err
	}
	capturePath := ""
	if opts.CaptureDir != "" {
		capturePath = filepath.Join(opts.CaptureDir, fmt.Sprintf("%s-%s.pcapng", l.ID, pl.Name))
	}
	return lk.Start(StartConfig{
		Up:   emulator.Config{Params: pl.Up, Schedule: pl.UpSchedule},
		Down: emulator.Config{Params: pl.Down, Schedule: pl.DownSchedule},
		Seed: l.Seed, Index: i, MTU: l.Profile.MTU, Start: l.Start, Truth: l.truth,
		CapturePath: capturePath, LabelA: a.name, LabelB: b.name,
		ICMPFrom4: linkAddr(i+1, 254), Spin: opts.Spin, RealTime: opts.RealTime,
		AllowCPUIdle: opts.AllowCPUIdle,
	})
}

// Down stops forwarding, removes the namespaces (after ending the
// processes still in them), closes the ground truth and captures and
// removes the state file. It returns every error met but always goes on.
func (l *Lab) Down() error {
	var errs []error
	for _, lk := range l.links {
		errs = append(errs, lk.Stop())
	}
	for _, nd := range l.nodes {
		killNamespace(nd.ns.Name())
		errs = append(errs, nd.ns.Delete())
	}
	for _, lk := range l.links {
		errs = append(errs, lk.Close())
	}
	if l.truth != nil {
		errs = append(errs, l.truth.Close())
	}
	if l.state != "" {
		if err := os.Remove(l.state); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	l.links, l.nodes, l.truth = nil, nil, nil
	return errors.Join(errs...)
}

// killNamespace ends the processes left in a namespace (started with lab
// exec) so that it really goes away: SIGTERM, then SIGKILL after 2 s.
func killNamespace(ns string) {
	pids := func() []int {
		out, err := exec.Command("ip", "netns", "pids", ns).Output()
		if err != nil {
			return nil
		}
		var ps []int
		for _, f := range strings.Fields(string(out)) {
			if pid, err := strconv.Atoi(f); err == nil && pid != os.Getpid() {
				ps = append(ps, pid)
			}
		}
		return ps
	}
	ps := pids()
	for _, pid := range ps {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	for deadline := time.Now().Add(2 * time.Second); len(ps) > 0 && time.Now().Before(deadline); ps = pids() {
		time.Sleep(50 * time.Millisecond)
	}
	for _, pid := range ps {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// Nodes lists the node names, client first.
func (l *Lab) Nodes() []string {
	var n []string
	for _, nd := range l.nodes {
		n = append(n, nd.name)
	}
	return n
}

// Namespace returns the network namespace name of a node.
func (l *Lab) Namespace(nodeName string) (string, error) {
	for _, nd := range l.nodes {
		if nd.name == nodeName {
			return nd.ns.Name(), nil
		}
	}
	return "", fmt.Errorf("sonde lab: no node %q (nodes: %s)", nodeName, strings.Join(l.Nodes(), ", "))
}

// Command returns a command that runs in a node's namespace. An unknown
// node gives a command whose Start fails with the reason. Start it with
// netns.StartChild when it must not outlive this process.
func (l *Lab) Command(ctx context.Context, nodeName, name string, args ...string) *exec.Cmd {
	ns, err := l.Namespace(nodeName)
	if err != nil {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Err = err
		return cmd
	}
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns, name}, args...)...)
}

// AddrOn is a node's address on link i (1-based, as in NodeAddr): where
// a server on that node listens for a client across that link, so that
// a subpath is measured between its own ends.
func (l *Lab) AddrOn(nodeName string, link int) (string, error) {
	for k, nd := range l.nodes {
		if nd.name == nodeName {
			a, err := NodeAddr(k, len(l.Profile.Links), link)
			if err != nil {
				return "", fmt.Errorf("sonde lab: %s: %w", nodeName, err)
			}
			return a.String(), nil
		}
	}
	return "", fmt.Errorf("sonde lab: no node %q (nodes: %s)", nodeName, strings.Join(l.Nodes(), ", "))
}

// ClientAddr is the client's address.
func (l *Lab) ClientAddr() string { return l.nodes[0].addr }

// ServerAddr is the server's address.
func (l *Lab) ServerAddr() string { return l.nodes[len(l.nodes)-1].addr }

// LinkStats is the live state of one link.
type LinkStats struct {
	Name     string        `json:"name"`
	Up, Down forward.Stats `json:"-"`
}

// Stats returns the live counters of every link.
func (l *Lab) Stats() []LinkStats {
	var out []LinkStats
	for i, lk := range l.links {
		s := LinkStats{Name: l.Profile.Links[i].Name}
		s.Up, s.Down = lk.Stats()
		out = append(out, s)
	}
	return out
}

// Err reports a forwarder that stopped on its own (a device vanished).
func (l *Lab) Err() error {
	var errs []error
	for _, lk := range l.links {
		errs = append(errs, lk.Err())
	}
	return errors.Join(errs...)
}

// Watch blocks until ctx ends or a link fails (see Watch), calling report
// every interval.
func (l *Lab) Watch(ctx context.Context, interval time.Duration, report func()) error {
	return Watch(ctx, l.links, interval, 0, report)
}

// FlushTruth pushes buffered ground-truth records to the file.
func (l *Lab) FlushTruth() error {
	if l.truth == nil {
		return nil
	}
	return l.truth.Flush()
}

// Truth is the configured path, for sonde test's report.
func (l *Lab) Truth() model.GroundTruth {
	return l.Profile.GroundTruth()
}

// Describe writes a human summary of the lab.
func (l *Lab) Describe(w io.Writer) {
	fmt.Fprintf(w, "lab %s: profile %s (seed %d)\n", l.ID, l.Profile.Name, l.Seed)
	if l.Profile.Description != "" {
		fmt.Fprintf(w, "  %s\n", l.Profile.Description)
	}
	if l.Profile.Source != "" {
		fmt.Fprintf(w, "  source: %s\n", l.Profile.Source)
	}
	for i, nd := range l.nodes {
		fmt.Fprintf(w, "  %-9s %-15s netns %s\n", nd.name, nd.addr, nd.ns.Name())
		if i < len(l.Profile.Links) {
			pl := l.Profile.Links[i]
			fmt.Fprintf(w, "    │ %s up:   %s\n", pl.Name, pl.Up)
			fmt.Fprintf(w, "    │ %s down: %s\n", pl.Name, pl.Down)
		}
	}
}
