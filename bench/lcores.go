package bench

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"rig/internal/cpuset"
	"rig/internal/host"
)

// LcoreMap is what an EAL -l or --lcores value asks for: the main lcore and
// the CPUs each lcore runs on. It is computed before EAL starts, so rig can
// pin its own threads and refuse impossible core lists with a reason.
type LcoreMap struct {
	Main int           // the main lcore: Go and EAL's control threads
	CPUs map[int][]int // lcore -> CPUs it may run on
}

// Workers lists the worker lcores (every lcore but the main one), in order.
func (m LcoreMap) Workers() []int {
	var w []int
	for l := range m.CPUs {
		if l != m.Main {
			w = append(w, l)
		}
	}
	sort.Ints(w)
	return w
}

// ParseLcores reads an EAL core list: -l syntax ("0-2,4") or --lcores
// syntax ("0@1,1@0", "(1-2)@(2-3)", "0,(1,2)@3"). mainLcore < 0 means EAL's
// default: the lowest lcore.
func ParseLcores(s string, mainLcore int) (LcoreMap, error) {
	m := LcoreMap{Main: -1, CPUs: map[int][]int{}}
	bad := func(why string) (LcoreMap, error) {
		return LcoreMap{}, fmt.Errorf("lcores %q: %s (want e.g. 0-2, or 0@1,1@0)", s, why)
	}
	var elems []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
			if depth < 0 {
				return bad("unbalanced ')'")
			}
		case ',':
			if depth == 0 {
				elems = append(elems, s[start:i])
				start = i + 1
			}
		}
	}
	if depth != 0 {
		return bad("unbalanced '('")
	}
	elems = append(elems, s[start:])
	for _, e := range elems {
		lhs, rhs, hasAt := strings.Cut(e, "@")
		group := strings.HasPrefix(lhs, "(")
		lcores, err := lcoreSet(strings.Trim(lhs, "()"))
		if err != nil {
			return bad(err.Error())
		}
		var cpus []int
		if hasAt {
			if cpus, err = lcoreSet(strings.Trim(rhs, "()")); err != nil {
				return bad(err.Error())
			}
		}
		for _, l := range lcores {
			if l >= 128 {
				return bad(fmt.Sprintf("lcore %d: at most 127", l))
			}
			if _, dup := m.CPUs[l]; dup {
				return bad(fmt.Sprintf("lcore %d given twice", l))
			}
			switch {
			case hasAt:
				m.CPUs[l] = cpus
			case group:
				m.CPUs[l] = lcores
			default:
				m.CPUs[l] = []int{l}
			}
		}
	}
	if len(m.CPUs) == 0 {
		return bad("no lcore")
	}
	m.Main = mainLcore
	if mainLcore < 0 {
		for l := range m.CPUs {
			if m.Main < 0 || l < m.Main {
				m.Main = l
			}
		}
	} else if _, ok := m.CPUs[mainLcore]; !ok {
		return bad(fmt.Sprintf("--main-lcore %d is not in the list", mainLcore))
	}
	return m, nil
}

// lcoreSet reads one side of a core-list element ("1", "1-3", "1,3-4"):
// a CPU list that names at least one.
func lcoreSet(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("%q is not a number or range", s)
	}
	return cpuset.ParseList(s)
}

// mainLcoreArg returns the --main-lcore value among extra EAL args, or -1.
func mainLcoreArg(eal []string) (int, error) {
	for i, a := range eal {
		v, ok := strings.CutPrefix(a, "--main-lcore=")
		if a == "--main-lcore" {
			if i+1 >= len(eal) {
				return 0, fmt.Errorf("--eal --main-lcore: missing value")
			}
			v, ok = eal[i+1], true
		}
		if ok {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return 0, fmt.Errorf("--eal --main-lcore %q: want an lcore number", v)
			}
			return n, nil
		}
	}
	return -1, nil
}

// OnlineCPUs reads the host's online CPUs; nil when unknown.
func OnlineCPUs() []int {
	cpus, err := cpuset.Online(host.New("/"))
	if err != nil {
		return nil
	}
	return cpus
}

// checkLcores refuses a core list this host cannot run, before EAL would
// refuse it with its whole usage text. explicit: --lcores was given (else
// the list came from --cores). online nil: not checked.
func (c *Config) checkLcores(m LcoreMap, explicit bool, online []int) error {
	if len(m.Workers()) < c.Cores {
		return failuref("--lcores "+c.LcoreList(), fmt.Sprintf("list %d lcores, or lower --cores", c.Cores+1),
			"%d worker lcore(s) (lcore %d is the main one, running Go), want --cores %d", len(m.Workers()), m.Main, c.Cores)
	}
	if online == nil {
		return nil
	}
	on := map[int]bool{}
	for _, cpu := range online {
		on[cpu] = true
	}
	var missing []string
	for _, l := range slices.Sorted(maps.Keys(m.CPUs)) {
		for _, cpu := range m.CPUs[l] {
			if !on[cpu] {
				missing = append(missing, fmt.Sprintf("lcore %d on CPU %d", l, cpu))
			}
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if !explicit {
		return failuref("", fmt.Sprintf("--cores %d, or share CPUs with --lcores, e.g. --lcores %s", max(len(online)-1, 1), exampleLcores(c.Cores, online)),
			"--cores %d needs %d CPUs (lcore 0 runs Go, each worker lcore its own CPU); this host has %d online (%s)", c.Cores, c.Cores+1, len(online), cpuset.FormatList(online))
	}
	return failuref("--lcores "+c.Lcores, "map lcores onto online CPUs, e.g. --lcores "+exampleLcores(c.Cores, online),
		"%s, but this host's online CPUs are %s", strings.Join(missing, ", "), cpuset.FormatList(online))
}

// exampleLcores maps main lcore 0 and n workers round-robin onto online CPUs.
func exampleLcores(n int, online []int) string {
	if len(online) == 0 {
		return "0@0,1@0"
	}
	parts := []string{"0@" + strconv.Itoa(online[0])}
	for i := 1; i <= n; i++ {
		cpu := online[0]
		if len(online) > 1 {
			cpu = online[1+(i-1)%(len(online)-1)]
		}
		parts = append(parts, fmt.Sprintf("%d@%d", i, cpu))
	}
	return strings.Join(parts, ",")
}

// ealOptions are DPDK 22.11's EAL options (eal_common_options.c) and
// whether each takes a value: 1 required, 2 optional (--opt=value only).
var ealOptions = map[string]int{
	"allow": 1, "base-virtaddr": 1, "block": 1, "create-uio-dev": 0, "file-prefix": 1,
	"force-max-simd-bitwidth": 1, "help": 0, "huge-dir": 1, "huge-unlink": 2, "huge-worker-stack": 2,
	"in-memory": 0, "iova-mode": 1, "lcores": 1, "legacy-mem": 0, "log-level": 1, "main-lcore": 1,
	"match-allocations": 0, "mbuf-pool-ops-name": 1, "no-hpet": 0, "no-huge": 0, "no-pci": 0,
	"no-shconf": 0, "no-telemetry": 0, "proc-type": 1, "single-file-segments": 0, "socket-limit": 1,
	"socket-mem": 1, "syslog": 2, "telemetry": 0, "trace": 1, "trace-bufsz": 1, "trace-dir": 1,
	"trace-mode": 1, "vdev": 1, "vfio-intr": 1, "vfio-vf-token": 1, "vmware-tsc-map": 0,
}

// ealShortOptions: EAL 22.11's "a:b:c:s:d:hl:S:m:n:r:v" (true: takes a value).
var ealShortOptions = map[byte]bool{'a': true, 'b': true, 'c': true, 's': true, 'd': true, 'h': false, 'l': true, 'S': true, 'm': true, 'n': true, 'r': true, 'v': false}

// checkEALArgs refuses extra EAL arguments EAL 22.11 does not know, before
// EAL would print its error twice (it parses argv twice) and its usage.
func checkEALArgs(args []string) error {
	const fix = "see DPDK 22.11's EAL parameters; rig sets -l/--lcores, --file-prefix, --vdev and memory itself"
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case strings.HasPrefix(a, "--"):
			name, _, hasVal := strings.Cut(a[2:], "=")
			kind, ok := ealOptions[name]
			if !ok {
				return failuref("--eal "+a, fix, "not an EAL option")
			}
			if kind == 0 && hasVal {
				return failuref("--eal "+a, fix, "--%s takes no value", name)
			}
			if kind == 1 && !hasVal {
				if i+1 >= len(args) {
					return failuref("--eal "+a, fix, "needs a value")
				}
				i++
			}
		case len(a) >= 2 && a[0] == '-':
			takes, ok := ealShortOptions[a[1]]
			if !ok {
				return failuref("--eal "+a, fix, "not an EAL option")
			}
			if takes && len(a) == 2 {
				if i+1 >= len(args) {
					return failuref("--eal "+a, fix, "needs a value")
				}
				i++
			}
		default:
			return failuref(fmt.Sprintf("--eal %q", a), fix, "not an option (EAL takes only options)")
		}
	}
	return nil
}
