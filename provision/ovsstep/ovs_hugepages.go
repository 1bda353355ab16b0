package ovsstep

import (
	"fmt"
	"strconv"
	"strings"

	"rig/hugepages"
	"rig/ovs"
)

// pagesFree says whether the hugepages DPDK found too few of at
// ovs-vswitchd's last start are free now: what other_config's
// dpdk-socket-mem asks per socket (MB) against the free pages of the NUMA
// node of that number (the system-wide pools on a kernel without NUMA). A
// restart then initialises DPDK; have says what is free, for the plan or
// the fix. dpdk-socket-mem unset asks for any free page.
func (s *ovsStep) pagesFree(st *ovs.State) (ok bool, have string) {
	asks := map[int]int{0: 0}
	if sm := strings.TrimSpace(st.OtherConfig["dpdk-socket-mem"]); sm != "" {
		for i, f := range strings.Split(sm, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 0 {
				return false, fmt.Sprintf("dpdk-socket-mem %q is not a list of MB per socket", sm)
			}
			asks[i] = n
		}
	}
	sizes, err := hugepages.Sizes(s.h)
	if err != nil {
		return false, "free hugepages unreadable: " + err.Error()
	}
	nodes, err := hugepages.Nodes(s.h)
	if err != nil {
		return false, "free hugepages unreadable: " + err.Error()
	}
	ok = true
	var says []string
	for sock := 0; sock < len(asks); sock++ {
		node := sock
		if len(nodes) == 0 {
			node = hugepages.AllNodes
		}
		freeKB := int64(0)
		for _, kb := range sizes {
			if p, err := hugepages.ReadPool(s.h, kb, node); err == nil {
				freeKB += int64(p.Free) * kb
			}
		}
		need := asks[sock]
		if need == 0 && sock == 0 {
			need = 1 // unset: any page
		}
		if asks[sock] > 0 || sock == 0 {
			says = append(says, fmt.Sprintf("%d MB free on socket %d, dpdk-socket-mem asks %d MB", freeKB/1024, sock, asks[sock]))
		}
		if freeKB < int64(need)*1024 {
			ok = false
		}
	}
	return ok, strings.Join(says, "; ")
}
