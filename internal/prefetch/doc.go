// Package prefetch issues cache prefetch hints: a caller that knows which
// memory it will read soon (the analyser, the state of the flows of the
// next packets) starts the loads early so that their misses overlap. A
// hint has no effect on what a program computes; where the architecture
// has no instruction for it here, it does nothing.
package prefetch
