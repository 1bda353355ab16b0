#!/bin/sh
# release-check.sh BIN ARCH: BIN is an ELF executable for ARCH (as `file`
# names it: x86-64, aarch64) whose only dynamic dependencies (readelf -d
# NEEDED) are glibc's, at symbol versions up to GLIBC_2.34 (RHEL 9; Ubuntu
# 22.04, BlueField's OS, has 2.35), as cmd/rig's TestReleaseDynamicDeps
# checks for amd64. Prints what it found; exits 1 if not so.
set -eu
bin=$1
arch=$2
info=$(file -b "$bin")
case $info in
*"ELF 64-bit"*"$arch"*) ;;
*)
	echo "release-check: $bin: want an ELF 64-bit $arch executable; file says: $info" >&2
	exit 1
	;;
esac
needed=$(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
bad=$(echo "$needed" | grep -Ev '^(libc\.so\.6|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|librt\.so\.1|libresolv\.so\.2|ld-linux-(x86-64|aarch64)\.so\.[12])$' || true)
if [ -n "$bad" ]; then
	echo "release-check: $bin needs libraries outside glibc: $(echo "$bad" | tr '\n' ' ')(link them statically: bench/internal/dpdk/link_static.go)" >&2
	exit 1
fi
glibc=$(readelf --dyn-syms -W "$bin" | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)
if [ "$(printf '%s\n' GLIBC_2.34 "$glibc" | sort -V | tail -1)" != GLIBC_2.34 ]; then
	echo "release-check: $bin needs $glibc, newer than GLIBC_2.34: it would not start on RHEL 9" >&2
	exit 1
fi
echo "$bin: $info"
echo "  NEEDED: $(echo "$needed" | tr '\n' ' ')(glibc only; newest symbol version $glibc)"
