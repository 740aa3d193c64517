//go:build !linux

package capture

import (
	"context"

	"github.com/sonde-project/sonde/internal/capfilter"
)

// Source is an open capture; there is none on this OS.
type Source struct{}

// Open returns ErrOS.
func Open(string, *capfilter.Filter) (*Source, error) { return nil, ErrOS }

// Next returns ErrOS.
func (*Source) Next(context.Context, *Packet) error { return ErrOS }

// Stats returns ErrOS.
func (*Source) Stats() (Stats, error) { return Stats{}, ErrOS }

// Close does nothing.
func (*Source) Close() error { return nil }
