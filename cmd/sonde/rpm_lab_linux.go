//go:build !monitoronly

package main

import (
	"context"
	"fmt"
	"os"

	"github.com/sonde-project/sonde/internal/model"
)

// runRPMLab runs `sonde rpm --lab PROFILE`: sonde serve with a self-signed
// certificate in the lab's server namespace, this command in its client
// namespace against it (-k: the certificate was made for this run).
func runRPMLab(ctx context.Context, profile string, args []string) error {
	dir, err := os.MkdirTemp("", "sonde-rpm-lab-")
	if err != nil {
		return fmt.Errorf("--lab: %w", err)
	}
	defer os.RemoveAll(dir)
	r := labRun{profile: profile, serveArgs: []string{"--tls", "self-signed", "--tls-dir", dir},
		clientArgs: func(model.GroundTruth) []string { return []string{"--insecure"} }}
	if len(args) > 0 {
		r.server = args[0]
	}
	return r.run(ctx)
}
