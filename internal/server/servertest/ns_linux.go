package servertest

import "github.com/sonde-project/sonde/internal/netns"

// inNamespace runs fn in the named network namespace.
func inNamespace(name string, fn func() error) error { return netns.Do(name, fn) }
