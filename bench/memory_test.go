package bench

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// The EAL memory mode follows the vdevs: a virtio-user port (vhost-user
// shares at most 8 regions) or a memif zero-copy port gets memfd hugepages
// with one file per memseg list; everything else keeps ChooseMemory's pick.
func TestChooseMemoryForVDevs(t *testing.T) {
	const vu = "net_virtio_user0,path=/tmp/v0.sock,server=1"
	for _, tc := range []struct {
		name     string
		cfg      Config
		free     int // MiB
		mounted  bool
		want     string // EAL memory args
		wantErr  string
		wantWarn bool
	}{
		{"ring, mounted", Config{VDevs: []string{"net_ring0"}}, 100, true, "[--huge-unlink]", "", false},
		{"ring, not mounted", Config{VDevs: []string{"net_ring0"}}, 100, false, "[--in-memory]", "", false},
		{"ring, no free pages", Config{VDevs: []string{"net_ring0"}}, 0, true, "[--no-huge -m 512]", "", true},
		{"virtio_user, mounted", Config{VDevs: []string{vu}}, 100, true, "[--in-memory --single-file-segments -m 40]", "", false},
		{"virtio_user, not mounted", Config{VDevs: []string{"net_ring0", vu}}, 100, false, "[--in-memory --single-file-segments -m 40]", "", false},
		{"virtio_user, huge dir", Config{VDevs: []string{vu}, HugeDir: "/mnt/h"}, 100, true, "[--in-memory --single-file-segments --huge-dir /mnt/h -m 40]", "", false},
		{"virtio_user, --eal --single-file-segments", Config{VDevs: []string{vu}, EAL: []string{"--single-file-segments"}}, 100, true, "[--in-memory -m 40]", "", false},
		{"virtio_user, --eal -m", Config{VDevs: []string{vu}, EAL: []string{"-m", "64"}}, 100, true, "[--in-memory --single-file-segments]", "", false},
		{"virtio_user, --eal -m64", Config{VDevs: []string{vu}, EAL: []string{"-m64"}}, 30, true, "[--in-memory --single-file-segments]", "", false},
		{"virtio_user, --eal --socket-mem", Config{VDevs: []string{vu}, EAL: []string{"--socket-mem=64"}}, 100, true, "[--in-memory --single-file-segments]", "", false},
		{"virtio_user, too little free", Config{VDevs: []string{vu}}, 38, true, "", "needs 40 MiB of hugepages, 38 MiB are free", false},
		{"virtio_user, no free pages", Config{VDevs: []string{vu}}, 0, true, "", "no free hugepages", false},
		{"memif copy mode", Config{VDevs: []string{"net_memif0,role=client,socket=/tmp/m"}}, 100, true, "[--huge-unlink]", "", false},
		{"memif zero-copy", Config{VDevs: []string{"net_memif0,role=client,socket=/tmp/m,zero-copy=yes"}}, 100, true, "[--in-memory --single-file-segments -m 40]", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ChooseMemoryFor(&tc.cfg, tc.free, tc.mounted, 40)
			if tc.wantErr != "" {
				var be *Error
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.As(err, &be) || !strings.Contains(be.Cause(), "file descriptor") || !strings.Contains(be.Fix(), "hugepages") {
					t.Fatalf("got %v, %v; want an error %q with cause and fix", m, err, tc.wantErr)
				}
				return
			}
			if err != nil || fmt.Sprint(m.Args) != tc.want || (m.Warning != "") != tc.wantWarn {
				t.Errorf("got %v (warning %q), %v; want %s", m.Args, m.Warning, err, tc.want)
			}
		})
	}
}

// Memory options a fd-sharing port cannot work with are refused before
// EAL starts, naming the option and the port.
func TestValidateRefusesUnshareableMemory(t *testing.T) {
	const vu = "net_virtio_user0,path=/tmp/v0.sock,server=1"
	for _, tc := range []struct {
		cfg  Config
		want string // "" = accepted
	}{
		{Config{Role: RoleLoop, VDevs: []string{vu}, NoHuge: true}, "--no-huge: not possible with net_virtio_user0"},
		{Config{Role: RoleLoop, VDevs: []string{vu}, EAL: []string{"--no-huge"}}, "--no-huge: not possible with net_virtio_user0"},
		{Config{Role: RoleLoop, VDevs: []string{vu}, EAL: []string{"--huge-unlink"}}, "--eal --huge-unlink: not possible with net_virtio_user0"},
		{Config{Role: RoleLoop, VDevs: []string{vu}, EAL: []string{"--huge-unlink=always"}}, "--eal --huge-unlink=always: not possible"},
		{Config{Role: RoleLoop, VDevs: []string{vu}, EAL: []string{"--huge-unlink=never"}}, ""},
		{Config{Role: RoleLoop, VDevs: []string{"net_memif0,zero-copy=yes,socket=/tmp/m"}, NoHuge: true}, "--no-huge: not possible with net_memif0"},
		{Config{Role: RoleLoop, VDevs: []string{"net_ring0"}, NoHuge: true}, ""},
	} {
		c := tc.cfg
		c.Defaults()
		err := c.Validate()
		if tc.want == "" {
			if err != nil {
				t.Errorf("%+v: %v, want accepted", tc.cfg, err)
			}
			continue
		}
		var be *Error
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.As(err, &be) || be.Cause() == "" || be.Fix() == "" {
			t.Errorf("%+v: %v, want %q with cause and fix", tc.cfg, err, tc.want)
		}
	}
}
