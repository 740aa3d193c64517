// Package fileargs expands the file arguments of the commands that read
// many saved files at once (sonde analyze: rotated captures; sonde mbm
// summary: saved results): a directory stands for its regular files, in
// name order, and the count is bounded while the directory is read, before
// any file is opened.
package fileargs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
)

// batch is how many directory entries are read at a time, so that a
// directory of millions of entries is refused after max, not listed whole.
const batch = 1024

// Expand lists the files of args: a file as given, a directory's regular
// files (not its subdirectories) whose names match (nil: every one), in
// name order. what names them in the error for a directory that has none
// (e.g. "capture files", ".json files"); more than max files in all are
// refused.
func Expand(args []string, match func(name string) bool, what string, max int) ([]string, error) {
	var out []string
	for _, a := range args {
		fi, err := os.Stat(a)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			out = append(out, a)
		} else {
			names, err := dirFiles(a, match, max-len(out))
			if errors.Is(err, errFull) {
				return nil, tooMany(max)
			}
			if err != nil {
				return nil, err
			}
			if len(names) == 0 {
				return nil, fmt.Errorf("%s: no %s in the directory", a, what)
			}
			for _, n := range names {
				out = append(out, filepath.Join(a, n))
			}
		}
		if len(out) > max {
			return nil, tooMany(max)
		}
	}
	return out, nil
}

func tooMany(max int) error { return fmt.Errorf("more than %d files: give fewer at once", max) }

// errFull: a directory holds more files than there is room for.
var errFull = errors.New("full")

// dirFiles is the sorted names of dir's regular files that match; more
// than room of them is errFull.
func dirFiles(dir string, match func(string) bool, room int) ([]string, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	var names []string
	for {
		ents, err := d.ReadDir(batch)
		for _, e := range ents {
			if e.Type().IsRegular() && (match == nil || match(e.Name())) {
				if len(names) >= room {
					return nil, errFull
				}
				names = append(names, e.Name())
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", dir, err)
		}
	}
	sort.Strings(names)
	return names, nil
}
