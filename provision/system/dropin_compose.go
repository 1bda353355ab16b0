package system

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"rig/hugepages"
	"rig/provision"
)

// rig's boot-time drop-ins (/etc/default/grub.d/rig.cfg,
// /etc/sysctl.d/90-rig.conf, /etc/tmpfiles.d/rig-hugepages.conf) are one
// file each, shared by every playbook of rig's: each playbook records what
// it put there (KernelRecord.BootArgs and SysctlFile, HugeRecord.Persist),
// and the file holds what every playbook still up put there, composed in
// the order they first changed the host (provision.Layers) — the order
// their live values compose in, so the file says what the host runs: a
// later playbook's sysctl value or boot page count wins while it is up,
// said in a note, and the earlier one's comes back with its down. rig down
// -p X writes the file with the others' settings; the last playbook's down
// puts back the file as it was before rig (its record, in Files). Another
// playbook's settings go into the file only as rig's own format can hold
// them (kernelBeforeWhy, hugepagesBeforeWhy): a record that could not is
// refused, naming its playbook, before any write.

// contribution walks the playbooks' contributions to one drop-in in layer
// order: each other playbook's (from its records, by of; skipped when
// none), and own in this playbook's place (at the end when it has none
// yet); own is left out when withOwn is false (this playbook's down).
func contribution[T any](ls []provision.PlaybookRecords, self int, of func(st provision.RigState) (T, bool), own T, withOwn bool, each func(pb string, c T, isOwn bool) error) error {
	for i, l := range ls {
		if i == self {
			if withOwn {
				if err := each(l.Playbook, own, true); err != nil {
					return err
				}
			}
			continue
		}
		if c, ok := of(l.Records); ok {
			if err := each(l.Playbook, c, false); err != nil {
				return err
			}
		}
	}
	if self < 0 && withOwn {
		return each("", own, true)
	}
	return nil
}

// composeRefused is a Problem for another playbook's record of what it put
// in a drop-in that rig's format cannot hold.
func composeRefused(sf provision.StateStore, pb, field, path, why string) error {
	return &provision.Problem{Object: "rig state " + sf.String(),
		Err:       fmt.Errorf("%w: playbook %s's %s: %s; rig writes into %s only what it could have written there; nothing was written", provision.ErrStateRecord, pb, field, why, path),
		CauseText: "the state file was edited or damaged",
		FixText:   "bring playbook " + pb + " down first (rig down -p " + pb + "), or remove its record from " + sf.String() + " and restore its settings by hand"}
}

// composeSysctl is the sysctl drop-in's keys (sorted) and values for the
// playbooks of ls, own (normalized) in this playbook's place, with notes
// where own and another playbook's value for one key differ.
func composeSysctl(sf provision.StateStore, ls []provision.PlaybookRecords, self int, own map[string]string, withOwn bool) ([]string, map[string]string, []string, error) {
	merged, from := map[string]string{}, map[string]string{}
	var notes []string
	err := contribution(ls, self, func(st provision.RigState) (map[string]string, bool) {
		if st.Kernel == nil || len(st.Kernel.SysctlFile) == 0 {
			return nil, false
		}
		return st.Kernel.SysctlFile, true
	}, own, withOwn, func(pb string, c map[string]string, isOwn bool) error {
		keys := slices.Sorted(maps.Keys(c))
		if why := kernelBeforeWhy(sysctlDropIn, renderSysctl(keys, c)); why != "" && !isOwn {
			return composeRefused(sf, pb, "kernel.sysctlFile", sysctlDropIn, why)
		}
		for _, k := range keys {
			v := normSysctl(c[k])
			if old, ok := merged[k]; ok && old != v && (isOwn || from[k] == "") {
				earlier, later := "playbook "+from[k]+"'s", "this playbook's"
				if !isOwn {
					earlier, later = "this playbook's", "playbook "+pb+"'s (up after this one)"
				}
				notes = append(notes, fmt.Sprintf("sysctl %s: %s %s is replaced in %s by %s %s while both are up (as the live value is); it comes back with that playbook's down", k, earlier, old, sysctlDropIn, later, v))
			}
			merged[k] = v
			if isOwn {
				from[k] = ""
			} else {
				from[k] = pb
			}
		}
		return nil
	})
	return slices.Sorted(maps.Keys(merged)), merged, notes, err
}

// bootKey is what identifies a boot item among the tokens of the GRUB
// drop-in: a hugepage pool by its size (hugepagesz= with the hugepages=
// that follows), default_hugepagesz by its name (the kernel takes the
// first and ignores the others), any other parameter by itself (repeated
// with another value, the kernel takes the last, or all: console=).
func bootItems(tokens []string) (keys []string, items [][]string) {
	for i := 0; i < len(tokens); i++ {
		t := tokens[i]
		switch {
		case strings.HasPrefix(t, "hugepagesz=") && i+1 < len(tokens) && strings.HasPrefix(tokens[i+1], "hugepages="):
			keys, items = append(keys, t), append(items, tokens[i:i+2])
			i++
		case strings.HasPrefix(t, "default_hugepagesz="):
			keys, items = append(keys, "default_hugepagesz"), append(items, tokens[i:i+1])
		default:
			keys, items = append(keys, t), append(items, tokens[i:i+1])
		}
	}
	return keys, items
}

// composeBoot is the GRUB drop-in's parameters for the playbooks of ls,
// own in this playbook's place: each item once, a later playbook's pool of
// one size (or default page size) replacing an earlier one's in its place,
// with notes where own and another playbook's differ.
func composeBoot(sf provision.StateStore, ls []provision.PlaybookRecords, self int, own []string, withOwn bool) ([]string, []string, error) {
	var order []string
	merged, from := map[string][]string{}, map[string]string{}
	var notes []string
	err := contribution(ls, self, func(st provision.RigState) ([]string, bool) {
		if st.Kernel == nil || len(st.Kernel.BootArgs) == 0 {
			return nil, false
		}
		return st.Kernel.BootArgs, true
	}, own, withOwn, func(pb string, c []string, isOwn bool) error {
		if why := kernelBeforeWhy(grubDropIn, renderDropIn(c)); why != "" && !isOwn {
			return composeRefused(sf, pb, "kernel.bootArgs", grubDropIn, why)
		}
		keys, items := bootItems(c)
		for i, k := range keys {
			old, ok := merged[k]
			if !ok {
				order = append(order, k)
			} else if strings.Join(old, " ") != strings.Join(items[i], " ") && (isOwn || from[k] == "") {
				earlier, later := "playbook "+from[k]+"'s", "this playbook's"
				if !isOwn {
					earlier, later = "this playbook's", "playbook "+pb+"'s (up after this one)"
				}
				notes = append(notes, fmt.Sprintf("kernel cmdline: %s %s is replaced in %s by %s %s while both are up; it comes back with that playbook's down",
					earlier, strings.Join(old, " "), grubDropIn, later, strings.Join(items[i], " ")))
			}
			merged[k] = items[i]
			if isOwn {
				from[k] = ""
			} else {
				from[k] = pb
			}
		}
		return nil
	})
	var out []string
	for _, k := range order {
		out = append(out, merged[k]...)
	}
	return out, notes, err
}

// composePools is the tmpfiles.d drop-in's pools for the playbooks of
// ls, own in this playbook's place, composed as the live pool is: a
// later playbook's exact count replaces, a minimum raises. ok checks
// another playbook's pool against the host ("" when fine).
func composePools(sf provision.StateStore, ls []provision.PlaybookRecords, self int, own []provision.PersistPool, withOwn bool, ok func(p provision.PersistPool) string) ([]hugepages.Reservation, error) {
	type key struct {
		kb   int64
		node int
	}
	var order []key
	merged := map[key]int{}
	err := contribution(ls, self, func(st provision.RigState) ([]provision.PersistPool, bool) {
		if st.Hugepages == nil || len(st.Hugepages.Persist) == 0 {
			return nil, false
		}
		return st.Hugepages.Persist, true
	}, own, withOwn, func(pb string, c []provision.PersistPool, isOwn bool) error {
		for i, p := range c {
			if why := ok(p); why != "" && !isOwn {
				return composeRefused(sf, pb, fmt.Sprintf("hugepages.persist[%d]", i), hugepages.TmpfilesPath, why)
			}
			k := key{p.SizeKB, p.Node}
			n, seen := merged[k]
			switch {
			case !seen:
				order = append(order, k)
				merged[k] = p.Count
			case p.Exact || p.Count > n:
				merged[k] = p.Count
			}
		}
		return nil
	})
	var out []hugepages.Reservation
	for _, k := range order {
		out = append(out, hugepages.Reservation{SizeKB: k.kb, Node: k.node, Count: merged[k]})
	}
	return out, err
}

// parseSysctlDropIn reads the KEY = VALUE lines of rig's sysctl drop-in
// (nil when the text is not rig's: kernelBeforeWhy).
func parseSysctlDropIn(text string) map[string]string {
	if kernelBeforeWhy(sysctlDropIn, text) != "" {
		return nil
	}
	out := map[string]string{}
	for _, l := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(l, " = "); ok && !strings.HasPrefix(l, "#") {
			out[k] = v
		}
	}
	return out
}

// downAdds is what rig down -p X, composing the drop-in of the playbooks
// still up, would put there that is neither there now nor a setting X
// itself made (whose value before X, another playbook's, comes back):
// "" when nothing. A down only takes X's settings out of a drop-in; what
// it would add beyond that comes from a record no playbook of rig's wrote
// (or a file edited since), and is refused before any write.
func downAdds[K comparable, V comparable](composed map[K]V, now map[K]V, own func(K) bool, show func(K, V) string) string {
	var out []string
	for k, v := range composed {
		if own(k) {
			continue
		}
		if cur, ok := now[k]; !ok || cur != v {
			out = append(out, show(k, v))
		}
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

// refuseAdds is the Problem for downAdds' answer.
func refuseAdds(sf provision.StateStore, ls []provision.PlaybookRecords, self int, path, adds string) error {
	return &provision.Problem{Object: "rig state " + sf.String(),
		Err: fmt.Errorf("%w: composing %s from the records of the playbooks still up (%s) would put there %s, which neither this playbook set nor the file holds now; nothing was written",
			provision.ErrStateRecord, path, otherNames(ls, self), adds),
		CauseText: "the state file or " + path + " was edited since rig wrote them",
		FixText:   "bring the other playbooks down first, or make " + path + " and their records agree (rig up -p PLAYBOOK rewrites both), then rig down again"}
}

// bootItemMap is the items of a GRUB drop-in's parameters by bootItems'
// keys.
func bootItemMap(tokens []string) map[string]string {
	keys, items := bootItems(tokens)
	out := map[string]string{}
	for i, k := range keys {
		out[k] = strings.Join(items[i], " ")
	}
	return out
}
