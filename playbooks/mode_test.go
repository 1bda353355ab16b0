package playbooks

import (
	"strings"
	"testing"
)

func TestModeSection(t *testing.T) {
	pb, err := Parse("t.yaml", []byte("name: t\nmode: {want: dpu}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if w, _ := pb.Mode.ModeWant(); w != "dpu" || !pb.Mode.AutoDevices() {
		t.Errorf("%+v", pb.Mode)
	}
	pb, err = Parse("t.yaml", []byte("name: t\nmode:\n  want: NIC\n  devices: [\"0000:03:00.0\", \"b1:00.0\"]\n"))
	if err != nil || pb.Mode.AutoDevices() || len(pb.Mode.Devices) != 2 {
		t.Fatalf("%+v %v", pb, err)
	}
	for _, c := range []struct{ yaml, want string }{
		{"name: t\nmode:\n  want: turbo\n", `t.yaml:3: mode.want: unknown mode "turbo"`},
		{"name: t\nmode:\n  devices: [auto]\n", "t.yaml:2: mode.want: missing"},
		{"name: t\nmode:\n  want: dpu\n  devices: [auto, \"03:00.0\"]\n", "mode.devices[0]: auto cannot be combined"},
		{"name: t\nmode:\n  want: dpu\n  devices:\n    - 03:00.0\n    - 0000:03:00.0\n", "t.yaml:6: mode.devices[1]: same device as devices[0]"},
		{"name: t\nmode:\n  want: dpu\n  devices: [mlx5_0]\n", "want a PCI address"},
		{"name: t\nmode:\n  want: dpu\n  tool: x\n", "t.yaml:4: mode.tool: unknown field"},
	} {
		_, err := Parse("t.yaml", []byte(c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err = %v, want %q", c.yaml, err, c.want)
		}
	}
}
