package playbooks

import (
	"strings"
	"testing"
	"time"
)

func TestParseRDMAAndMST(t *testing.T) {
	pb, err := Parse("t.yaml", []byte("name: x\nmst:\n  start: false\n  min_devices: 2\nrdma:\n  ports:\n    - device: mlx5_0\n    - device: mlx5_1\n      port: 2\n    - netdev: p1\n  timeout: 3s\n"))
	if err != nil {
		t.Fatal(err)
	}
	if pb.MST.StartMST() || pb.MST.MinDevices != 2 {
		t.Errorf("mst %+v", pb.MST)
	}
	r := pb.RDMA
	if len(r.Ports) != 3 || r.Ports[0].PortNum() != 1 || r.Ports[1].PortNum() != 2 || r.Ports[2].Netdev != "p1" || r.WaitTimeout() != 3*time.Second {
		t.Errorf("rdma %+v", r)
	}
	if (&MSTSpec{}).StartMST() != true || (&RDMASpec{}).WaitTimeout() != DefaultRDMATimeout {
		t.Error("defaults: mst.start true, rdma.timeout 10s")
	}
}

func TestParseRDMAErrorsHaveLines(t *testing.T) {
	src := "name: x\nrdma:\n  ports:\n    - device: mlx5_0\n      netdev: p0\n    - netdev: \"a b\"\n    - devise: mlx5_1\n  timeout: forever\nmst:\n  min_devices: -3\n"
	_, err := Parse("t.yaml", []byte(src))
	if err == nil {
		t.Fatal("want errors")
	}
	// unknown keys are caught by the walker before values are validated
	if !strings.Contains(err.Error(), "t.yaml:7: rdma.ports[2].devise: unknown field (known: device, port, netdev)") {
		t.Errorf("err:\n%v", err)
	}
	src = strings.Replace(src, "devise", "device", 1)
	_, err = Parse("t.yaml", []byte(src))
	for _, want := range []string{
		"t.yaml:4: rdma.ports[0]: give device (and port) or netdev, not both",
		`t.yaml:6: rdma.ports[1].netdev: not a network interface name: "a b"`,
		`t.yaml:8: rdma.timeout: want a duration from 0s to 10m like 10s, got "forever"`,
		"t.yaml:10: mst.min_devices: want 0..64, got -3",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err lacks %q:\n%v", want, err)
		}
	}
}
