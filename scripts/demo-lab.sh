#!/bin/sh
# make demo: the lab story. A virtual BlueField-2 (rig lab up), rig's bring-up
# inside it with no special flags: exit 3 (DPU mode needs a power cycle),
# rig lab power-cycle, all steps ok with the check's load, loss budget,
# PASS and offload verdict, again with 0 changes; the lab goes down also when a step fails. Exits 1 when any exit
# code differs from the expected one.
# usage: scripts/demo-lab.sh RIG [LAB_NAME]
RIG=${1:?usage: demo-lab.sh RIG [LAB_NAME]}
LAB=${2:-demo}
bad=0

# step WANT HEADING CMD...: print the heading and the command, run it, compare its exit code
step() {
	want=$1 heading=$2
	shift 2
	printf '\n=== %s\n$ %s\n' "$heading" "$*"
	"$@"
	rc=$?
	if [ "$rc" -ne "$want" ]; then
		printf '!!! exit %s, expected %s\n' "$rc" "$want"
		bad=1
	fi
	return "$rc"
}

# lab up cleans up after itself when it fails (and leaves alone a lab of that name already up)
# --far-ends wire: the check's far ends in the lab's wire netns (rig plays
# them itself); without it the far ends are the lab's host and peer
step 0 "a virtual BlueField-2: netns, card sysfs view, firmware tools, the lab's own OvS" \
	"$RIG" lab up bf2-dpu --name "$LAB" --far-ends wire || { printf '\nmake demo: FAILED\n'; exit 1; }
trap '"$RIG" lab down "$LAB" >/dev/null 2>&1; exit 1' INT TERM
{
	step 3 "bring-up, first run: DPU mode is set for next boot (exit 3: power cycle required; the check waits for it)" \
		"$RIG" lab exec "$LAB" -- rig up -p bf2-dpu
	step 0 "power cycle the card: next-boot firmware becomes current, the lab's OvS starts again" \
		"$RIG" lab power-cycle "$LAB"
	step 0 "bring-up, second run: every step ok, the check sends traffic p0 -> bridge -> pf0hpf at its stated load (the lab's: a fixed rate and a loss budget), judges loss and p99 latency there and says whether OvS (hw-offload on) offloaded the flows (in a lab: not offloaded: lab)" \
		"$RIG" lab exec "$LAB" -- rig up -p bf2-dpu
	step 0 "third run: 0 changes (the check runs again; traffic is not a change)" \
		"$RIG" lab exec "$LAB" -- rig up -p bf2-dpu
}
step 0 "lab down: processes, namespaces, mounts and the hugepages the lab's rig reserved are gone" \
	"$RIG" lab down "$LAB"
if [ "$bad" -ne 0 ]; then
	printf '\nmake demo: FAILED (an exit code above differs from the expected one)\n'
	exit 1
fi
printf '\nmake demo: ok\n'
