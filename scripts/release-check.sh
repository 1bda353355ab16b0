#!/bin/sh
# release-check.sh BIN ARCH: BIN is a fully static ELF executable for ARCH
# (as `file` names it: x86-64, aarch64): `file` says "statically linked",
# and it has no program interpreter and no dynamic dependency (readelf: no
# INTERP, no NEEDED), so it starts on any Linux of its architecture
# whatever its C library (no glibc version floor), as cmd/rig's
# TestReleaseDynamicDeps checks for amd64. Prints what it found; exits 1
# if not so.
set -eu
bin=$1
arch=$2
info=$(file -b "$bin")
case $info in
*"ELF 64-bit"*"$arch"*"statically linked"*) ;;
*)
	echo "release-check: $bin: want a statically linked ELF 64-bit $arch executable; file says: $info" >&2
	exit 1
	;;
esac
if readelf -lW "$bin" | grep -q 'INTERP'; then
	echo "release-check: $bin has a program interpreter: $(readelf -lW "$bin" | sed -n 's/.*\[Requesting program interpreter: \(.*\)\]/\1/p') (link it with -extldflags -static: mk/release.mk)" >&2
	exit 1
fi
needed=$(readelf -dW "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
if [ -n "$needed" ]; then
	echo "release-check: $bin needs shared libraries: $(echo "$needed" | tr '\n' ' ')(link them statically: mk/release.mk, bench/internal/dpdk/link_static.go)" >&2
	exit 1
fi
echo "$bin: $info"
echo "  no interpreter, no NEEDED: runs on any $arch Linux, whatever its C library"
