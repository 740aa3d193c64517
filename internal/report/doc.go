// Package report renders results for people: the text summaries, the
// self-contained HTML reports (inline CSS and SVG charts) and the CSV of
// `sonde test` (model.Result), `sonde udp` (model.UDPResult), `sonde
// analyze` (model.Analysis), `sonde mbm` (model.MBMResult: each test's
// verdict, its UDP or TCP block and the composition of subpaths) and
// `sonde monitor report` (model.MonitorReport, read from a monitor's own
// store or from the fleet store its rows are shipped to, docs/fleet.md).
// It computes no measurement of its own; it only
// arranges, compares and labels the figures in a result (metrics.md §0
// units: SI rates, IEC sizes).
//
// One of each thing: every HTML page is a body in one shell (page.go: the
// skeleton, stylesheet, header, footer, key-value and grid tables), every
// text table goes through one writer (table.go), which also gives CSV.
// The test result's text and HTML share one formatted view (view.go), so
// they always say the same thing. Ground truth from a lab run is shown next
// to the figure it checks; missing parts of a partial result are left out,
// never invented.
//
// Load and Decode (saved.go) read a saved result by its schema field, so
// `sonde report` renders it with the same writer as the run that made it;
// compare.go sets the headline figures of several results side by side.
package report
