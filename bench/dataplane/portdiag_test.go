package dataplane

import (
	"strings"
	"testing"
)

// The PMDs' own lines (DPDK 22.11, as logged on this host) map to a cause
// and a fix that name what to do.
func TestDiagnosePortFromPMDLog(t *testing.T) {
	vdevs := []string{"net_virtio_user0,path=/tmp/ov/v0.sock,server=1", "net_memif1,role=client,id=3,socket=/tmp/ov/m1.sock"}
	for _, tc := range []struct {
		name, port, log string
		cause, fix      string // substrings; "" cause = nothing known
	}{
		{"vhost regions", "net_virtio_user0",
			"update_memory_region(): Too many memory regions\nvhost_user_set_memory_table(): Failed to set memory table\nvirtio_user_mem_event_cb(): (/tmp/ov/v0.sock) Failed to update memory table\n",
			"vhost-user shares at most 8 memory regions", "--single-file-segments"},
		{"vhost socket in use", "net_virtio_user0",
			"vhost_user_start_server(): failed to bind to /tmp/ov/v0.sock: Address already in use; remove it and try again\nvirtio_user_dev_setup(): (/tmp/ov/v0.sock) Failed to setup backend\n",
			"is in use", "another path="},
		{"vhost other failure", "net_virtio_user0",
			"virtio_user_dev_init(): (/tmp/ov/v0.sock) Failed to set backend owner\n", "Failed to set backend owner", "vhost-server-path=/tmp/ov/v0.sock"},
		{"memif ring count", "net_memif1",
			"memif_msg_receive_disconnect(): Disconnect received: Invalid ring index\n", "Invalid ring index", "--rxq 2 --txq 1"},
		{"memif id", "net_memif1",
			"memif_msg_receive_disconnect(): Disconnect received: ID not found\n", "ID not found", "this port has id=3"},
		{"nothing known", "net_memif1", "EAL: Detected CPU lcores: 2\n", "", ""},
		{"other driver", "net_ring0", "Too many memory regions\n", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, ok := diagnosePort(tc.port, vdevs, tc.log)
			if tc.cause == "" {
				if ok {
					t.Fatalf("diagnosis %+v, want none", d)
				}
				return
			}
			if !ok || !strings.Contains(d.cause, tc.cause) || !strings.Contains(d.fix, tc.fix) {
				t.Errorf("diagnosis %+v (ok %v), want cause ~%q fix ~%q", d, ok, tc.cause, tc.fix)
			}
		})
	}
}

// /proc/net/unix: a listening vhost-user server socket, and one whose
// backend connected (the accepted socket carries the listener's path).
func TestUnixStatesAndVirtioServers(t *testing.T) {
	const procNetUnix = `Num       RefCount Protocol Flags    Type St Inode Path
0000000000000000: 00000002 00000000 00010000 0001 01 31337 /tmp/ov/v0.sock
0000000000000000: 00000002 00000000 00010000 0001 01 31338 /tmp/ov/v1.sock
0000000000000000: 00000003 00000000 00000000 0001 03 31339 /tmp/ov/v1.sock
0000000000000000: 00000003 00000000 00000000 0001 03 31340
`
	l, c := unixStates(procNetUnix)
	if !l["/tmp/ov/v0.sock"] || !l["/tmp/ov/v1.sock"] || c["/tmp/ov/v0.sock"] || !c["/tmp/ov/v1.sock"] {
		t.Errorf("listening %v connected %v", l, c)
	}
	s := virtioServers([]string{"net_virtio_user0,path=/a,server=1", "net_virtio_user1,path=/b", "net_ring0"})
	if len(s) != 1 || s["net_virtio_user0"] != "/a" {
		t.Errorf("virtio servers: %v, want only net_virtio_user0 (server=1)", s)
	}
}
