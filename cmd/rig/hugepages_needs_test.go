package main

import (
	"strconv"
	"strings"
	"testing"

	"rig/bench"
	"rig/bench/dataplane"
	"rig/internal/testutil/hugetest"
	"rig/playbooks"
	"rig/provision/check"
)

// playbookNeeds is what applying a playbook takes from the 2 MiB pool,
// read from the playbook itself: its OvS's socket memory (up to its
// dpdk-socket-limit, when DPDK is requested) and its check's dataplane
// (check.CheckMemoryMB). ref is an embedded playbook's name or YAML
// text.
func playbookNeeds(t *testing.T, ref string) []hugetest.Need {
	t.Helper()
	data := []byte(ref)
	if b, ok := playbooks.Embedded(ref); ok {
		data = b
	}
	pb, err := playbooks.Parse("needs.yaml", data)
	if err != nil {
		t.Fatalf("playbook: %v", err)
	}
	var needs []hugetest.Need
	if o := pb.OVS; o != nil && o.Config.DPDKInit != "" && o.Config.DPDKInit != "false" {
		// unset: OvS passes no --socket-mem and EAL preallocates nothing
		// (ovs-vswitchd.conf.db(5)); its mempools then take what they need
		mem := socket0MB(t, o.Config.DPDKSocketMem)
		needs = append(needs, hugetest.OVS(mem, socket0MB(t, o.Config.DPDKSocketLimit)))
	}
	if pb.Check != nil {
		mb, err := check.CheckMemoryMB(pb.Check)
		if err != nil {
			t.Fatalf("playbook %s: check memory: %v", pb.Name, err)
		}
		needs = append(needs, hugetest.DPDK("rig check dataplane ("+pb.Name+")", mb))
	}
	return needs
}

// socket0MB is socket 0's share of a dpdk-socket-mem or -limit list
// ("128" or "128,0"), 0 when unset.
func socket0MB(t *testing.T, v string) int {
	t.Helper()
	if v == "" {
		return 0
	}
	first, _, _ := strings.Cut(v, ",")
	n, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil {
		t.Fatalf("socket memory %q: %v", v, err)
	}
	return n
}

// benchNeed is one rig bench process's hugepage memory: c is its flags as
// a bench.Config (bench.MemoryMB sizes it as the run will).
func benchNeed(t *testing.T, what string, c bench.Config) hugetest.Need {
	t.Helper()
	mb, err := dataplane.MemoryMB(c)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return hugetest.DPDK(what, mb)
}
