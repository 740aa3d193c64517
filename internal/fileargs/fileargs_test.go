package fileargs

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestExpand: files as given, a directory's matching regular files in name
// order (not its subdirectories), an empty directory and too many files
// refused.
func TestExpand(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"b.json", "a.json", "c.txt"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "sub.json"), 0o700); err != nil {
		t.Fatal(err)
	}
	json := func(n string) bool { return strings.HasSuffix(n, ".json") }
	one := filepath.Join(dir, "c.txt")
	got, err := Expand([]string{one, dir}, json, ".json files", 10)
	want := []string{one, filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("%v, %v; want %v", got, err, want)
	}
	if got, err := Expand([]string{dir}, nil, "files", 10); err != nil || len(got) != 3 {
		t.Errorf("every file: %v, %v", got, err)
	}
	empty := filepath.Join(dir, "sub.json")
	if _, err := Expand([]string{empty}, nil, "capture files", 10); err == nil || err.Error() != empty+": no capture files in the directory" {
		t.Errorf("empty directory: %v", err)
	}
	if _, err := Expand([]string{dir}, nil, "files", 2); err == nil || err.Error() != "more than 2 files: give fewer at once" {
		t.Errorf("directory over the bound: %v", err)
	}
	if _, err := Expand([]string{one, one, one}, nil, "files", 2); err == nil || !strings.HasPrefix(err.Error(), "more than 2 files") {
		t.Errorf("arguments over the bound: %v", err)
	}
	if _, err := Expand([]string{filepath.Join(dir, "none")}, nil, "files", 2); err == nil {
		t.Error("a missing file was listed")
	}
}

// TestExpandBoundsLargeDirectory: a directory of more entries than one
// read returns is refused once the bound is passed.
func TestExpandBoundsLargeDirectory(t *testing.T) {
	dir := t.TempDir()
	for i := range batch + 10 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%05d", i)), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Expand([]string{dir}, nil, "files", batch+5); err == nil {
		t.Fatal("over the bound, listed")
	}
	if got, err := Expand([]string{dir}, nil, "files", batch+10); err != nil || len(got) != batch+10 {
		t.Fatalf("%d files, %v", len(got), err)
	}
}
