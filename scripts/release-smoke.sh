#!/bin/sh
# release-smoke.sh GOARCH BIN [RUNNER...]: smoke test of a release rig
# built for GOARCH on the BlueField fixtures, run as RUNNER BIN ... (make
# release: the amd64 binary natively, the arm64 one under
# qemu-aarch64-static; both are static, so qemu needs no arm64 C library;
# qemu-user has no openat2, so there the fixtures are read through rig's
# own in-tree resolution, internal/host/inroot.go). Each step prints what it ran and
# fails with the output when rig's answer is not the expected one:
#   version   linux/GOARCH, DPDK 22.11 linked static, mlx5_eth among the
#             PMDs read from the binary itself
#   inventory the BlueField-2 and BlueField-3 Arm-side fixtures
#   plan      bf2-dpu's mst, mode and rdma steps against the firmware
#             simulator (mode would change: separated -> DPU), bf3-dpu's rdma
#   linerate  the line-rate table (pure arithmetic, no EAL)
#   bench     a net_ring loop in one process, --no-huge (needs root: EAL's
#             runtime directory is /var/run/dpdk)
set -eu
arch=$1
bin=$2
shift 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fixtures=testdata/hosts

# step NAME WANT... -- ARGS...: run rig ARGS, check its output holds each WANT
step() {
	name=$1
	shift
	wants=""
	while [ "$1" != "--" ]; do
		wants="$wants
$1"
		shift
	done
	shift
	start=$(date +%s)
	if ! "$@" >"$work/out" 2>&1; then
		echo "smoke $name: FAILED (exit status): $*" >&2
		cat "$work/out" >&2
		exit 1
	fi
	while IFS= read -r w; do
		if [ -n "$w" ] && ! grep -qF -- "$w" "$work/out"; then
			echo "smoke $name: output lacks \"$w\": $*" >&2
			cat "$work/out" >&2
			exit 1
		fi
	done <<WANTS
$wants
WANTS
	echo "smoke $name: ok ($(($(date +%s) - start)) s): $*"
}

step version "linux/$arch" "DPDK 22.11" "linked static" " mlx5_eth " " net_ring " -- "$@" "$bin" version
sed 's/^/    /' "$work/out"
step inventory-bf2 "0000:03:00.0  BlueField-2 [15b3:a2d6]" "rdma mlx5_0/1: state 4: ACTIVE" -- "$@" "$bin" inventory --root "$fixtures/bf2-dpu-arm"
step inventory-bf3 "BlueField-3 [15b3:a2dc]" -- "$@" "$bin" inventory --root "$fixtures/bf3-dpu-arm"
step fwsim-init "" -- "$@" "$bin" fwsim init --fw-sim "$work/fw.json" --device 0000:03:00.0=a2d6:separated
step plan-bf2 "mode 0000:03:00.0: set INTERNAL_CPU_MODEL (next boot) SEPARATED_HOST(0) -> EMBEDDED_CPU(1)" \
	"plan: 2 ok, 0 changed, 1 would change, 0 pending reboot, 0 failed" -- \
	"$@" "$bin" plan -p bf2-dpu --only mst,mode,rdma --root "$fixtures/bf2-dpu-arm" --fw-sim "$work/fw.json"
step plan-bf3 "rdma mlx5_0/1 (p0): ACTIVE / LINK_UP" "plan: 1 ok, 0 changed, 0 would change, 0 pending reboot, 0 failed" -- "$@" "$bin" plan -p bf3-dpu --only rdma --root "$fixtures/bf3-dpu-arm"
step linerate "      64      84    37.202" "    1518    1538     2.032" -- "$@" "$bin" bench linerate --link-speed 25G
if [ "$(id -u)" != 0 ]; then
	echo "smoke bench: skipped: EAL needs root for /var/run/dpdk (run make release as root)"
	exit 0
fi
step bench-loop "sent 20000, received 20000, lost 0" -- "$@" "$bin" bench loop --vdev net_ring0 --no-huge --count 20000 --no-pin-go
sed -n '2,4p' "$work/out" | sed 's/^/    /'
