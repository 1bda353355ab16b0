package fakeexec

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"rig/internal/host"
)

func TestRecorderRecordsAndAnswersInOrder(t *testing.T) {
	ctx := context.Background()
	r := &Recorder{
		Answer: func(name string, args []string) ([]byte, error, bool) {
			return []byte("v1"), nil, name == "mst"
		},
		Next: func(ctx context.Context, name string, args ...string) ([]byte, error) {
			if name == "ovs-vsctl" {
				return []byte("ok"), nil
			}
			return nil, NotFound(name, args...)
		},
	}
	if out, err := r.Exec(ctx, "mst", "version"); err != nil || string(out) != "v1" {
		t.Errorf("Answer: %q %v", out, err)
	}
	if out, err := r.Exec(ctx, "ovs-vsctl", "show"); err != nil || string(out) != "ok" {
		t.Errorf("Next: %q %v", out, err)
	}
	_, err := r.Exec(ctx, "mstconfig", "-v")
	var te *host.ToolError
	if !errors.As(err, &te) || !te.NotFound() {
		t.Errorf("unknown tool: %v", err)
	}
	r.Record([]string{"mst", "start"})
	want := []string{"mst version", "ovs-vsctl show", "mstconfig -v", "mst start"}
	if got := r.Lines(); !reflect.DeepEqual(got, want) {
		t.Errorf("Lines %q, want %q", got, want)
	}
	if got := r.Filter(func(a []string) bool { return a[0] == "mst" }); !reflect.DeepEqual(got, [][]string{{"mst", "version"}, {"mst", "start"}}) {
		t.Errorf("Filter %q", got)
	}
	r.Reset()
	if len(r.Calls()) != 0 {
		t.Errorf("Reset left %q", r.Calls())
	}
}
