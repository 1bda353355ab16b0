package playbooks

import (
	"strings"
	"testing"
)

func TestBindSection(t *testing.T) {
	pb, err := Parse("t.yaml", []byte("name: t\nbind:\n  devices: [\"0000:00:04.0\", ens5]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if pb.Bind.DriverName() != "vfio-pci" || len(pb.Bind.Devices) != 2 {
		t.Fatalf("%+v", pb.Bind)
	}
	for _, c := range []struct{ yaml, want string }{
		{"name: t\nbind:\n  driver: igb_uio\n  devices: [ens5]\n", `t.yaml:3: bind.driver: "igb_uio": want one of vfio-pci, uio_pci_generic`},
		{"name: t\nbind:\n  devices: []\n", "bind.devices: empty"},
		{"name: t\nbind:\n  devices:\n    - 00:04.0\n    - \"0000:00:04.0\"\n", "t.yaml:5: bind.devices[1]: same device as devices[0]"},
		{"name: t\nbind:\n  devices: [\"ens5; reboot\"]\n", "bind.devices[0]: \"ens5; reboot\" is neither a PCI address"},
		{"name: t\nbind:\n  devices: [averyveryverylongname]\n", "1 to 15 characters"},
		{"name: t\nbind:\n  devices: [ens5]\n  force: yes please\n", "t.yaml:4: bind.force: want true or false"},
	} {
		_, err := Parse("t.yaml", []byte(c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err = %v, want %q", c.yaml, err, c.want)
		}
	}
}
