package netns

import (
	"errors"
	"os"
	"testing"
)

// TestDo: fn runs in the namespace, and the calling thread is back in its
// own afterwards; a namespace that does not exist is an error and fn does
// not run.
func TestDo(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces")
	}
	n, err := Add(UniqueName("do"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Delete() })
	own, err := os.Readlink("/proc/thread-self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.Stat("/run/netns/" + n.Name())
	if err != nil {
		t.Fatal(err)
	}
	errFn := errors.New("fn's error")
	var inside os.FileInfo
	err = Do(n.Name(), func() (err error) {
		if inside, err = os.Stat("/proc/thread-self/ns/net"); err != nil {
			return err
		}
		return errFn
	})
	if !errors.Is(err, errFn) {
		t.Fatalf("Do returned %v, want fn's error", err)
	}
	if !os.SameFile(inside, want) {
		t.Errorf("fn ran in namespace %v, want %s's", inside.Sys(), n.Name())
	}
	if after, err := os.Readlink("/proc/thread-self/ns/net"); err != nil || after != own {
		t.Errorf("after Do the thread is in %q (%v), want %q", after, err, own)
	}
	ran := false
	if err := Do("sonde-no-such-namespace", func() error { ran = true; return nil }); err == nil || ran {
		t.Errorf("Do on a missing namespace: err %v, fn ran %v", err, ran)
	}
}
