#!/bin/sh
# make demo: the lab story on the BlueField's three machines. A virtual
# BlueField-2 (rig lab up bf2-dpu: the x86 host, the DPU's Arm, the peer
# across the cable), rig bench serve started on the host and on the peer as
# a user starts them, rig's bring-up on the Arm with the check's far ends on
# those serves: exit 3 (DPU mode needs a power cycle), rig lab power-cycle
# (it ends the Arm's processes only: the serves on the host and the peer
# live on), all steps ok with the check's traffic through the three machines
# (the peer's p0 -> the Arm's p0 -> bridge -> pf0hpf -> the host's PF0),
# its load, loss at each stage, the counts of the machines compared, PASS and offload verdict, again with 0 changes; lab down
# ends everything, the serves too (also when a step fails). Exits 1 when any
# exit code differs from the expected one or a serve outlives the lab.
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

# serve MACHINE ADDR NETDEV: start rig bench serve on a machine of the lab
# in the background, as a user would, and wait until it listens
serve() {
	log=$dir/serve-$1.log
	printf '$ %s lab exec %s --on %s -- rig bench serve --listen %s --token-file %s --allow-netdev %s &\n' "$RIG" "$LAB" "$1" "$2" "$TOKEN" "$3"
	"$RIG" lab exec "$LAB" --on "$1" -- rig bench serve --listen "$2" --token-file "$TOKEN" --allow-netdev "$3" >"$log" 2>&1 &
	pids="$pids $!"
	i=0
	until grep -q 'listening on' "$log"; do
		i=$((i + 1))
		if [ "$i" -gt 100 ] || ! kill -0 "$!" 2>/dev/null; then
			cat "$log"
			printf '!!! rig bench serve on the %s does not listen\n' "$1"
			return 1
		fi
		sleep 0.1
	done
	sed 's/^/  /' "$log"
}

# the token the three machines share: a file of the user's (mode 0600), here
# in a temp dir that the lab's machines see as this system's /tmp
dir=$(mktemp -d /tmp/rig-demo.XXXXXX) || exit 1
TOKEN=$dir/peer.token
(umask 077 && head -c 32 /dev/urandom | base64 >"$TOKEN") || exit 1
pids=
cleanup() { rm -rf "$dir"; }

# lab up cleans up after itself when it fails (and leaves alone a lab of that name already up)
step 0 "a virtual BlueField-2 as three machines: the x86 host (netns rig-lab-$LAB-host, its PFs joined to pf0hpf/pf1hpf, tmfifo_net0 192.168.100.1), the Arm (netns rig-lab-$LAB: the card's sysfs view, firmware tools, the lab's own OvS), the peer (rig-lab-$LAB-peer: the far ends of p0/p1, mgmt0 192.168.101.1 <-> the Arm's oob_net0)" \
	"$RIG" lab up bf2-dpu --name "$LAB" || { cleanup; printf '\nmake demo: FAILED\n'; exit 1; }
trap '"$RIG" lab down "$LAB" >/dev/null 2>&1; cleanup; exit 1' INT TERM
# the check's far ends: p0's on the peer's serve (its p0, across the cable),
# pf0hpf's on the host's serve (its PF0, as by default, with this token)
FAR="--far-end p0:serve=192.168.101.1:7400,netdev=p0,token_file=$TOKEN --far-end pf0hpf:serve=192.168.100.1:7400,token_file=$TOKEN"
{
	printf '\n=== the far ends, started as a user starts them: rig bench serve on the host (its PF0 enp225s0f0np0, the far end of pf0hpf, on tmfifo_net0) and on the peer (its p0, the far end of the Arm'"'"'s p0, on the management link)\n'
	if serve host 192.168.100.1:7400 enp225s0f0np0 && serve peer 192.168.101.1:7400 p0; then
		# shellcheck disable=SC2086 # FAR: flags, no spaces in their values
		step 3 "bring-up on the Arm, first run: DPU mode is set for next boot (exit 3: power cycle required; the check waits for it)" \
			"$RIG" lab exec "$LAB" -- rig up -p bf2-dpu $FAR
		step 0 "power cycle the card: next-boot firmware becomes current, the Arm's processes end and its OvS starts again (the host's and the peer's serves run on)" \
			"$RIG" lab power-cycle "$LAB"
		# shellcheck disable=SC2086
		step 0 "bring-up, second run, both ways (--direction both): every step ok; the check probes both serves, then the peer's serve generates out of its p0 into the Arm's p0 -> bridge -> pf0hpf -> the host's PF0, where the host's serve receives (check.ports [p0, pf0hpf]: in at p0, out at pf0hpf), and back: the host's serve generates out of its PF0 -> pf0hpf -> bridge -> p0 -> the peer's p0, where the peer's serve receives; each at the lab's fixed rate, loss placed at each stage, counts of the three machines compared, no latency (two clocks), and whether OvS (hw-offload on) offloaded the flows (in a lab: not offloaded: lab)" \
			"$RIG" lab exec "$LAB" -- rig up -p bf2-dpu $FAR --direction both
		# shellcheck disable=SC2086
		step 0 "third run: 0 changes (the check runs again through the three machines; traffic is not a change)" \
			"$RIG" lab exec "$LAB" -- rig up -p bf2-dpu $FAR
	else
		bad=1
	fi
}
step 0 "lab down: processes on all three machines (the serves too), namespaces, mounts and the hugepages the lab's rig reserved are gone" \
	"$RIG" lab down "$LAB"
for p in $pids; do
	i=0
	while kill -0 "$p" 2>/dev/null && [ "$(ps -o stat= -p "$p")" != Z ]; do
		i=$((i + 1))
		if [ "$i" -gt 50 ]; then
			printf '!!! rig bench serve (pid %s) outlived lab down by 5 s\n' "$p"
			bad=1
			break
		fi
		sleep 0.1
	done
	wait "$p" 2>/dev/null
done
cleanup
if [ "$bad" -ne 0 ]; then
	printf '\nmake demo: FAILED (an exit code above differs from the expected one, or a serve outlived the lab)\n'
	exit 1
fi
printf '\nmake demo: ok\n'
