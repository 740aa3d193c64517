// Package report renders a model.Result for people: the text summary printed
// by `sonde test` and a self-contained HTML report with inline SVG charts. It
// computes no measurement of its own; it only arranges, compares and labels
// the figures in the result (metrics.md §0 units: SI rates, IEC sizes).
//
// Both writers share one formatted view of the result (view.go), so the text
// summary and the HTML tables always say the same thing. Ground truth from a
// lab run is shown next to the figure it checks; missing parts of a partial
// result are left out, never invented.
//
// WriteAnalyzeHTML (analyze.go) renders a capture analysis (model.Analysis)
// for `sonde analyze --html` with the same stylesheet and chart code.
package report
