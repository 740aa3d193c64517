package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"
)

// UpForeground is `sonde lab up` without --detach: it builds the lab from
// profile, describes it on out, forwards until ctx ends, calling stats
// with the links' counters every interval (0: never) and once at the
// end, then tears the lab down.
func UpForeground(ctx context.Context, out io.Writer, profile string, opts Options, every time.Duration, stats func([]LinkStats)) error {
	l, err := Up(ctx, profile, opts)
	if err != nil {
		return err
	}
	l.Describe(out)
	fmt.Fprintf(out, "lab %s is up. Run commands with `sonde lab exec client -- CMD` (server: %s); Ctrl-C or `sonde lab down` to tear down.\n",
		l.ID, l.ServerAddr())
	show := func() { stats(l.Stats()) }
	runErr := l.Watch(ctx, every, show)
	show()
	fmt.Fprintf(out, "tearing lab %s down\n", l.ID)
	return errors.Join(runErr, l.Down())
}

// DetachSelf is `sonde lab up --detach`: this program started again with
// args (its own, less --detach) and childFlag, the hidden flag that makes
// the child write to its DetachedLog, in the background (Detach).
func DetachSelf(stateDir string, args []string, childFlag string) (State, string, error) {
	self, err := os.Executable()
	if err != nil {
		return State{}, "", fmt.Errorf("lab up: %w", err)
	}
	return Detach(stateDir, self, append(WithoutDetach(args), "--"+childFlag))
}

// WithoutDetach is args without --detach in its spellings.
func WithoutDetach(args []string) []string {
	return slices.DeleteFunc(slices.Clone(args), func(a string) bool {
		return a == "--detach" || a == "-d" || a == "--detach=true"
	})
}
