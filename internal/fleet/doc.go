// Package fleet assembles `sonde fleet report` (docs/fleet.md): many
// monitors of one shared store over a range, per monitor and per label
// group, R(L) against each requirement profile with verdicts, the worst
// aligned hour, outages and bufferbloat grades, and outages seen by many
// monitors at once grouped as one upstream event, so each monitor's
// outages are told apart as its line's or upstream's. It also keeps the
// store's hourly aggregate (Aggregate), which makes a month of a
// thousand monitors a few million rows instead of 172 million.
//
// The store is read through store.FleetReader; grouping, merging and judging
// are pure functions of what it returns.
package fleet
