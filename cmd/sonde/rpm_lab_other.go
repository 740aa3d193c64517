//go:build !linux && !monitoronly

package main

import (
	"context"
	"fmt"
)

func runRPMLab(context.Context, string, []string) error {
	return fmt.Errorf("sonde rpm --lab: %w", errNotSupported)
}
