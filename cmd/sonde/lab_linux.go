//go:build linux && !monitoronly

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sonde-project/sonde/internal/lab"
	"github.com/sonde-project/sonde/internal/report"
)

func newLabCmd() *cobra.Command {
	var stateDir string
	cmd := &cobra.Command{
		Use:   "lab",
		Short: "Build emulated test topologies (client — link — [router — link]… — server) in network namespaces",
		Long: `sonde lab builds a chain of network namespaces joined by emulated links
(sonde emulate's link model), with addresses from 198.18.0.0/15:

  sonde lab profiles                 list the built-in profiles and their sources
  sonde lab up PROFILE|FILE.json     build it and forward until Ctrl-C (--detach: in the background)
  sonde lab exec NODE -- CMD ARGS…   run a command in client, server or router-N
  sonde lab list                     show running labs
  sonde lab down [--id ID]           tear a running lab down
  sonde lab clean [--all]            remove what crashed runs left behind

The client is 198.18.1.1, the server 198.18.N.2 for a chain of N links.
Building a lab needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN).`,
	}
	cmd.PersistentFlags().StringVar(&stateDir, "state-dir", lab.DefaultStateDir, "where running labs are recorded")
	cmd.AddCommand(newLabUpCmd(&stateDir), newLabExecCmd(&stateDir), newLabDownCmd(&stateDir),
		newLabCleanCmd(&stateDir), newLabListCmd(&stateDir), newLabProfilesCmd())
	return cmd
}

func newLabProfilesCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "profiles",
		Short: "List the built-in profiles with their parameters and sources",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return report.WriteLabProfiles(cmd.OutOrStdout(), lab.Builtin())
		},
	}
}

type labUpFlags struct {
	seed       uint64
	truth      string
	captureDir string
	detach     bool
	stats      time.Duration
	realTime   bool
	cpuIdle    bool
	// detachedChild marks the background process of --detach: its
	// output goes to lab.DetachedLog, which its state file records.
	detachedChild bool
}

func newLabUpCmd(stateDir *string) *cobra.Command {
	var f labUpFlags
	cmd := &cobra.Command{
		Use:   "up PROFILE|FILE.json",
		Short: "Build a lab and forward packets until interrupted",
		Long: `sonde lab up builds the lab and stays in the foreground, forwarding
packets, until Ctrl-C (or sonde lab down); it then removes everything it made.
With --detach it starts itself in the background, waits until the lab is up
and returns; sonde lab down stops it. Profiles: ` + strings.Join(lab.Names(), ", ") + `.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := lab.Resolve(args[0]); err != nil {
				return err
			}
			if os.Geteuid() != 0 {
				return errors.New("lab up: building a lab needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN)")
			}
			if f.detach {
				return detachLab(cmd.OutOrStdout(), *stateDir)
			}
			return runLabUp(cmd.Context(), cmd.OutOrStdout(), args[0], *stateDir, f)
		},
	}
	fl := cmd.Flags()
	fl.Uint64Var(&f.seed, "seed", 0, "random seed of the links (0: random, recorded)")
	fl.StringVar(&f.truth, "truth-out", "", "write per-packet ground truth of every link to `FILE` (sonde analyze --truth reads it)")
	fl.StringVar(&f.truth, "truth", "", "")
	_ = fl.MarkDeprecated("truth", "use --truth-out FILE (--truth reads a ground truth, in sonde analyze)")
	fl.StringVar(&f.captureDir, "capture-dir", "", "write one pcapng per link (both ends, ns timestamps) into this directory")
	fl.BoolVarP(&f.detach, "detach", "d", false, "run in the background")
	fl.DurationVar(&f.stats, "stats", 0, "print live link counters at this interval")
	fl.BoolVar(&f.realTime, "realtime", false, "run the forwarding threads under SCHED_FIFO (experimental)")
	fl.BoolVar(&f.cpuIdle, "cpu-idle", false, "let idle CPUs halt (by default they poll while the lab is up: a halted CPU wakes tens of µs late for a packet)")
	fl.BoolVar(&f.detachedChild, detachedChildFlag, false, "internal: the background process of --detach")
	_ = fl.MarkHidden(detachedChildFlag)
	return cmd
}

func runLabUp(ctx context.Context, out io.Writer, profile, stateDir string, f labUpFlags) error {
	// Outputs are checked before the lab is built.
	if err := errors.Join(checkDuration("--stats", f.stats, 0, 24*time.Hour),
		checkOutput("--truth-out", f.truth), checkOutputDir("--capture-dir", f.captureDir)); err != nil {
		return err
	}
	opts := lab.Options{Seed: f.seed, TruthPath: f.truth, CaptureDir: f.captureDir,
		StateDir: stateDir, RealTime: f.realTime, AllowCPUIdle: f.cpuIdle}
	if f.detachedChild {
		opts.LogPath = lab.DetachedLog(stateDir, os.Getpid())
	}
	return lab.UpForeground(ctx, out, profile, opts, f.stats, func(links []lab.LinkStats) {
		var dirs []report.EmulatorDirection
		for _, s := range links {
			dirs = append(dirs, emuDir(s.Name+" up", s.Up), emuDir(s.Name+" down", s.Down))
		}
		_ = report.WriteEmulatorStats(out, dirs)
	})
}

// detachedChildFlag is the hidden flag detachLab gives its background
// process.
const detachedChildFlag = "detached-child"

// detachLab starts `sonde lab up` again without --detach, in the
// background (lab.Detach), and returns once the lab is up.
func detachLab(out io.Writer, stateDir string) error {
	s, logPath, err := lab.DetachSelf(stateDir, os.Args[1:], detachedChildFlag)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "lab %s (%s) is up in the background, pid %d, log %s\n", s.ID, s.Profile, s.PID, logPath)
	return report.WriteLabNodes(out, s.Nodes)
}

func newLabExecCmd(stateDir *string) *cobra.Command {
	var id string
	cmd := &cobra.Command{
		Use:   "exec NODE -- CMD [ARGS…]",
		Short: "Run a command in a lab node (client, server, router-N)",
		Args:  cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := findLab(*stateDir, id)
			if err != nil {
				return err
			}
			return s.Exec(args[0], args[1:])
		},
	}
	cmd.Flags().StringVar(&id, "id", "", "lab id when several are up")
	return cmd
}

// findLab finds the running lab --id names (any one when it is empty); an
// id that cannot be a lab's is a usage error.
func findLab(stateDir, id string) (lab.State, error) {
	if id != "" {
		if err := lab.CheckID(id); err != nil {
			return lab.State{}, usagef("--id: %s (sonde lab list shows the labs)", err)
		}
	}
	return lab.FindState(stateDir, id)
}

func newLabDownCmd(stateDir *string) *cobra.Command {
	var id string
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Tear down a running lab",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := findLab(*stateDir, id)
			if err != nil {
				return err
			}
			removed, err := s.Stop(15 * time.Second)
			for _, r := range removed { // what a dead process left
				fmt.Fprintln(cmd.OutOrStdout(), r)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "lab %s (%s) is down\n", s.ID, s.Profile)
			return nil
		},
	}
	cmd.Flags().StringVar(&id, "id", "", "lab id when several are up")
	return cmd
}

func newLabCleanCmd(stateDir *string) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "clean",
		Short: "Remove what dead labs left: namespaces, TUN devices, logs, state (--all: stop running labs too)",
		Long: `sonde lab clean removes what labs whose process has died left behind: their
namespaces (ending the processes still in them), TUN devices, log and state
file, and lab namespaces no live process owns. It waits up to 5 s for a lab
process that was just killed to exit. Running labs are left alone unless
--all. It prints one line per thing removed, or that there was nothing to
clean.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			removed, err := lab.Clean(*stateDir, all)
			for _, r := range removed {
				fmt.Fprintln(cmd.OutOrStdout(), r)
			}
			if len(removed) == 0 && err == nil {
				fmt.Fprintf(cmd.OutOrStdout(), "nothing to clean (state %s, namespaces %s*)\n", *stateDir, lab.NSPrefix)
			}
			if err != nil {
				return fmt.Errorf("lab clean: %w", err)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "also stop running labs")
	return cmd
}

func newLabListCmd(stateDir *string) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List labs recorded in the state directory",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			states, err := lab.ListStates(*stateDir)
			return errors.Join(err, report.WriteLabList(cmd.OutOrStdout(), states))
		},
	}
}
