package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestBenchPlotDefaultsNone: bench sweep and ndr write charts only when
// --plot PREFIX asks (the default was rig-sweep / rig-ndr in the current
// directory), and their help says so.
func TestBenchPlotDefaultsNone(t *testing.T) {
	var o, e bytes.Buffer
	root := newRootCmd(&app{out: &o, errOut: &e, output: "text"})
	for _, path := range [][]string{{"bench", "sweep"}, {"bench", "ndr"}} {
		c, _, err := root.Find(path)
		if err != nil || c.Name() != path[1] {
			t.Fatalf("find %v: %v", path, err)
		}
		f := c.Flags().Lookup("plot")
		if f == nil || f.DefValue != "" || !strings.Contains(f.Usage, "default none: no file is written unless asked") {
			t.Errorf("%v --plot: %+v", path, f)
		}
		if !strings.Contains(c.Long, "without\nit no file is written") && !strings.Contains(c.Long, "without it no file is written") {
			t.Errorf("%v help does not say no file is written without --plot:\n%s", path, c.Long)
		}
	}
	// no other command writes a file by default: every flag naming a file
	// or a path prefix defaults to none
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, name := range []string{"plot", "latency-plot", "metrics-file"} {
			if f := c.Flags().Lookup(name); f != nil && f.DefValue != "" {
				t.Errorf("%s --%s defaults to %q", c.CommandPath(), name, f.DefValue)
			}
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
}
