// Package netns creates and removes Linux network namespaces and veth pairs
// for sonde's tests and lab, by driving iproute2 (`ip`). Every name it makes
// starts with "sonde" so a crashed run can be found and cleaned (Clean).
//
// A namespace made by Add is claimed by its process (a lock on the
// namespace file) until Delete or the process's death, however it dies, so
// that a cleaner removes only namespaces nobody owns (ClaimOrphans). The
// package also starts child processes that die with their parent
// (StartChild), and runs a function inside a namespace (Do), for the
// in-process endpoints of tests.
//
// Linux only: on other systems the package is empty and the commands
// that need it say they are not supported there.
package netns
