//go:build !monitoronly

package main

import (
	"errors"
	"os"

	"github.com/spf13/cobra"

	"github.com/sonde-project/sonde/internal/lab"
	"github.com/sonde-project/sonde/internal/report"
	"github.com/sonde-project/sonde/internal/rpm"
)

func newRPMCmd() *cobra.Command {
	var (
		opt              rpm.ClientOptions
		out              report.Outputs
		only, labProfile string
		truthFile        string
	)
	cmd := &cobra.Command{
		Use:   "rpm URL",
		Short: "Measure responsiveness (RPM) with the IETF responsiveness test",
		Long: `Run the responsiveness test of draft-ietf-ippm-responsiveness-09 against any
server of the draft: sonde serve (https://HOST:8080), Apple's, Cloudflare's or
network-quality/goserver. URL is the configuration URL, or a server's base URL
(then /.well-known/nq on it); no scheme means https.

Per direction (download, then upload), load connections are added one per
interval ID until the goodput's moving average over MAD = 4 intervals is
stable (standard deviation under SDT = 5 % of it); foreign probes (1-byte GETs
on new connections: TCP, TLS and HTTP times) and self probes (on the load
connections, multiplexed over HTTP/2) run throughout. RPM is
60000 / the 95 % single-sided trimmed mean of the probe times, foreign and
self averaged (§5.3.1), per direction and over both together; confidence is
Low (fewer than MAD intervals), Medium (not stable) or High. Bands: the
draft's Poor < 300 ≤ Fair < 1000 ≤ Good < 6000 ≤ Excellent, and Apple-style
Low < 200 ≤ Medium < 1000 ≤ High (networkQuality's labels; undocumented, fit to
its outputs). docs/interop.md compares the figures with sonde test's RPM.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if labProfile != "" {
				if err := usageErr(out.Check()); err != nil {
					return err
				}
				return runRPMLab(cmd.Context(), labProfile, args)
			}
			if len(args) != 1 {
				return usagef("give the server's URL, or --lab PROFILE")
			}
			opt.URL = args[0]
			if err := opt.SetDirection(only); err != nil {
				return usageErr(err)
			}
			if err := opt.Check(); err != nil {
				return usageErr(err)
			}
			if err := usageErr(out.Check()); err != nil {
				return err
			}
			opt.Software = "sonde/" + version
			var err error
			if opt.Truth, err = lab.ReadTruthFile(truthFile); err != nil {
				return usageErr(err)
			}
			return runRPM(cmd, opt, &out)
		},
	}
	f := cmd.Flags()
	f.DurationVar(&opt.Interval, "interval", rpm.DefaultInterval, "interval ID between goodput and RPM checks, and between added load connections")
	f.DurationVar(&opt.MaxDuration, "max-duration", rpm.DefaultMaxDuration, "longest run of one direction")
	f.IntVar(&opt.MaxFlows, "max-flows", rpm.DefaultMaxFlows, "most load connections of one direction")
	f.DurationVar(&opt.ProbeInterval, "probe-interval", rpm.DefaultProbeInterval, "time between probe pairs (a foreign and a self probe; the draft allows 100 pairs a second)")
	f.StringVar(&only, "direction", "", "run only download or upload (default both, download first)")
	f.BoolVarP(&opt.Insecure, "insecure", "k", false, "accept any TLS certificate (sonde serve --tls self-signed: compare its printed fingerprint)")
	f.StringVar(&labProfile, "lab", "", "run across an emulated path: build lab profile `PROFILE` (sonde lab profiles), serve with a self-signed certificate in its server namespace, run from its client namespace, and record the configured path in the result; needs root; no URL")
	f.StringVar(&truthFile, "ground-truth", "", "JSON file with the path's configured properties (set by --lab)")
	_ = f.MarkHidden("ground-truth")
	registerOutputs(cmd, &out, "the result (schema sonde.rpm/v1)", false)
	return cmd
}

func runRPM(cmd *cobra.Command, opt rpm.ClientOptions, out *report.Outputs) error {
	res, runErr := rpm.Run(cmd.Context(), opt)
	if res == nil {
		return runErr
	}
	return errors.Join(runErr, out.Write(cmd.OutOrStdout(), os.Stderr, report.FormsOf(res)))
}
