//go:build monitoronly

package main

import "net/http"

// havePprof: the monitor-only build leaves net/http/pprof out (0.39 MB of
// the arm64 executable); profile the daemon with the full sonde.
const havePprof = false

func pprofRoutes(*http.ServeMux) {}
