//go:build !linux

package capture

import "context"

// Group is an open capture; there is none on this OS.
type Group struct{}

// Source is one socket of a capture; there is none on this OS.
type Source struct{}

// Open returns ErrOS.
func Open(string, Options) (*Group, error) { return nil, ErrOS }

// Sources returns nothing.
func (*Group) Sources() []*Source { return nil }

// RingBytes returns 0.
func (*Group) RingBytes() int { return 0 }

// Stats returns ErrOS.
func (*Group) Stats() (Stats, error) { return Stats{}, ErrOS }

// Close does nothing.
func (*Group) Close() error { return nil }

// Next returns ErrOS.
func (*Source) Next(context.Context, *Packet) error { return ErrOS }
