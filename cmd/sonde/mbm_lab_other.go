//go:build !linux && !monitoronly

package main

import (
	"context"
	"fmt"
)

func runMBMLab(context.Context, []string, *mbmFlags, bool) error {
	return fmt.Errorf("sonde mbm --lab: %w", errNotSupported)
}
