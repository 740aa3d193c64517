// Package web holds sonde's browser test page (docs/browser.md): TypeScript
// sources in src/, built by esbuild (`make web`, run by `make build`) into
// dist/, which is embedded here and served at / by `sonde serve`. dist/ is
// committed so `go build` and `go install` work without node.
package web

import (
	"io/fs"
)

// Assets returns the built page: index.html and its scripts.
func Assets() fs.FS {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		// fs.Sub fails only on an invalid path; "dist" is a constant.
		return dist
	}
	return sub
}
