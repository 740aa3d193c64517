// Package labtest builds one-link labs for tests that check sonde's
// figures against the emulator: the lab comes up with its pcapng capture
// (and, if asked, its ground truth) in the test's temporary directory, and
// goes down when the test ends, however it ends.
//
// Linux only, as labs are.
package labtest
