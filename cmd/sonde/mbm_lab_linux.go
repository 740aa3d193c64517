//go:build !monitoronly

package main

import (
	"context"

	"github.com/sonde-project/sonde/internal/mbm"
)

// runMBMLab runs `sonde mbm --lab PROFILE`. The model's flags and the
// outputs are checked here, before a lab is built; the run's own flags
// (mode, tests, derate…) by the client it re-runs, whose exit code this
// returns.
func runMBMLab(ctx context.Context, args []string, o *mbmFlags, rttSet bool) error {
	// The lab's server is this run's alone, so a public server's UDP
	// limits (200 Mbit/s, 20000 packets/s) must not refuse a target the
	// profile's path can carry.
	r := labRun{profile: o.lab, serveArgs: []string{"--udp-max-bitrate", "10G", "--udp-max-rate", "1000000"}}
	if len(args) > 0 {
		r.server = args[0]
	}
	r.check = func() error {
		if o.plan {
			return usagef("--plan sends nothing: give no --lab with it")
		}
		in, err := o.inputs(rttSet)
		if err != nil {
			return err
		}
		if _, err := mbm.NewPlan(in); err != nil {
			return usageErr(err)
		}
		return nil
	}
	return r.run(ctx)
}
