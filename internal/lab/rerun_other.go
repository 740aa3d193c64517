//go:build !linux

package lab

import (
	"context"
	"fmt"
)

// Run is Linux's (rerun_linux.go): elsewhere a Rerun says so.
func (r Rerun) Run(context.Context) error { return fmt.Errorf("--lab: %w", ErrUnsupported) }
