//go:build !monitoronly

package main

import "testing"

// TestDirectionNames: each --direction names one set of phases; "both" is
// the deprecated name of sequential; anything else is a usage error.
func TestDirectionNames(t *testing.T) {
	for _, c := range []struct {
		name                    string
		download, upload, bidir bool
	}{{"sequential", true, true, false}, {"both", true, true, false}, {"download", true, false, false},
		{"upload", false, true, false}, {"bidir", false, false, true}, {"all", true, true, true}} {
		tf := testFlags{direction: c.name, streams: "auto"}
		tf.cfg.Duration, tf.cfg.MaxStreams, tf.cfg.BaselineSamples, tf.cfg.ProbeInterval = 10e9, 16, 30, 20e6
		if err := tf.build(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := tf.cfg; got.Download != c.download || got.Upload != c.upload || got.Bidir != c.bidir {
			t.Errorf("%s: download %v upload %v bidir %v", c.name, got.Download, got.Upload, got.Bidir)
		}
	}
	tf := testFlags{direction: "up", streams: "auto"}
	tf.cfg.Duration, tf.cfg.MaxStreams, tf.cfg.BaselineSamples, tf.cfg.ProbeInterval = 10e9, 16, 30, 20e6
	if err := tf.build(); err == nil {
		t.Error("--direction up accepted")
	}
}
