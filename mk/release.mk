# make release: dist/rig-linux-amd64 and dist/rig-linux-arm64, one fully
# static binary each (no dynamic loader, no shared library: `file` says
# "statically linked"), so no glibc version floor: they start on any Linux
# of their architecture, BlueField images built on Ubuntu 20.04 (glibc
# 2.31) included; plus dist/SHA256SUMS; then both are smoke-tested, the
# arm64 one under qemu-user (scripts/release-smoke.sh).
# Not part of `make test`; cmd/rig's TestReleaseDynamicDeps and
# TestPrivilegedReleaseChroot check the amd64 link there (the same flags).
#
# Both are `go build -tags dpdkstatic` (bench/internal/dpdk/link_static.go:
# DPDK's PMDs and libraries, rdma-core, libpcap, libnuma, … from Debian's
# static archives), linked with -static against glibc's own static libc.a
# (libc6-dev; libc6-dev-arm64-cross for arm64) and gcc's libgcc_eh, which
# pthread_cancel uses instead of dlopening libgcc_s. Static glibc rather
# than musl: Debian's DPDK and rdma-core archives are built against glibc
# (musl-gcc cannot link them; a musl build would rebuild DPDK itself).
# Tags netgo and osusergo: Go's resolver and user lookup, not glibc's NSS
# (which a static glibc could only dlopen from the build machine's glibc
# version). The linker warns about the NSS and dlopen calls the archives
# hold (getaddrinfo in libnl, getpwuid in EAL's trace save, dlopen in EAL's
# plugin loader, pcap_nametoaddr): rig calls none of them (EAL loads no
# plugin in a static rig; rig passes no -d, enables no trace and parses no
# pcap filter by host name). -trimpath, stripped, with the version stamped
# from `git describe` (override: make release VERSION=1.2.3 COMMIT=…).
# Built on a Debian 12 amd64 host: amd64 natively, arm64 with Debian's
# gcc-aarch64-linux-gnu against an arm64 sysroot of Debian's own arm64 -dev
# packages, unpacked under build/arm64 by scripts/arm64-sysroot.sh (no
# `dpkg --add-architecture`, nothing arm64 installed on the host).
# Under qemu-user (which has no openat2) and on kernels before 5.6, --root
# reads fall back to rig's own in-tree resolution and writes under --root
# are refused (internal/host/inroot.go); the smoke runs the fixtures there.
# evaluated once (:=), so both binaries of one make release carry the same
# stamp even if HEAD moves while it builds
ifeq ($(origin VERSION),undefined)
VERSION := $(shell git describe --tags --always --dirty 2>/dev/null || echo unknown)
endif
ifeq ($(origin COMMIT),undefined)
COMMIT  := $(shell git rev-parse HEAD 2>/dev/null)
endif
DIST    := dist
ARM64   := build/arm64
SYSROOT := $(CURDIR)/$(ARM64)/sysroot
# host packages the release needs besides DEB_PKGS (cross compiler, arm64
# C library: headers, crt files and libc.a, libc6-dev-arm64-cross, which
# the compiler only recommends)
RELEASE_DEBS := gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static file binutils
# Debian arm64 packages unpacked into the sysroot: the static archives
# link_static.go names, and every .pc libdpdk.pc requires (pkg-config
# resolves Requires.private for --cflags too)
ARM64_DEBS := libdpdk-dev libibverbs-dev libnl-3-dev libnl-route-3-dev libpcap0.8-dev libdbus-1-dev \
	libnuma-dev libbsd-dev libmd-dev libjansson-dev libssl-dev libxdp-dev libbpf-dev zlib1g-dev libelf-dev
# Debian's arm64 DPDK is built with -march=armv8-a+crc -moutline-atomics
# (libdpdk.pc): cgo takes the latter only when allowed
RELEASE_GOFLAGS = -trimpath -tags dpdkstatic,netgo,osusergo -ldflags "-s -w -linkmode external -extldflags -static -X rig/internal/buildinfo.version=$(VERSION) -X rig/internal/buildinfo.commit=$(COMMIT)"
# CGO_LDFLAGS names the sysroot's library directory (pkg-config gives it
# too): Go's build cache keys a cgo package on CGO_LDFLAGS but not on
# PKG_CONFIG_SYSROOT_DIR, and with -trimpath not on the checkout's path, so
# without it a shared GOCACHE served this build the -L of another
# checkout's sysroot ("cannot find -l:librte_eal.a", seen on this project's
# VM after a build in another directory).
ARM64_ENV = CGO_ENABLED=1 GOOS=linux GOARCH=arm64 CC=aarch64-linux-gnu-gcc CGO_CFLAGS_ALLOW=-moutline-atomics PKG_CONFIG_PATH= \
	PKG_CONFIG_SYSROOT_DIR=$(SYSROOT) PKG_CONFIG_LIBDIR=$(SYSROOT)/usr/lib/aarch64-linux-gnu/pkgconfig:$(SYSROOT)/usr/share/pkgconfig \
	CGO_LDFLAGS="-g -O2 -L$(SYSROOT)/usr/lib/aarch64-linux-gnu"

.PHONY: release release-deps release-amd64 release-arm64 release-smoke

release: release-amd64 release-arm64
	cd $(DIST) && sha256sum rig-linux-amd64 rig-linux-arm64 >SHA256SUMS
	@sh scripts/release-check.sh $(DIST)/rig-linux-amd64 x86-64
	@sh scripts/release-check.sh $(DIST)/rig-linux-arm64 aarch64
	@$(MAKE) --no-print-directory release-smoke
	@cat $(DIST)/SHA256SUMS

release-deps:
	@$(MAKE) --no-print-directory deps DEB_PKGS="$(DEB_PKGS) $(RELEASE_DEBS)"

release-amd64: release-deps
	@mkdir -p $(DIST)
	CGO_ENABLED=1 GOOS=linux GOARCH=amd64 $(GO) build $(RELEASE_GOFLAGS) -o $(DIST)/rig-linux-amd64 ./cmd/rig

release-arm64: release-deps $(ARM64)/sysroot/.done
	@mkdir -p $(DIST)
	$(ARM64_ENV) $(GO) build $(RELEASE_GOFLAGS) -o $(DIST)/rig-linux-arm64 ./cmd/rig

# the sysroot is made once, and again when this list or the script changes
$(ARM64)/sysroot/.done: mk/release.mk scripts/arm64-sysroot.sh
	sh scripts/arm64-sysroot.sh $(ARM64) $(ARM64_DEBS)
	@touch $@

# both binaries on the BlueField fixtures (version, inventory, plan,
# linerate, a net_ring loop with --no-huge): amd64 natively, arm64 under
# qemu-user (static: no -L, no arm64 C library needed)
release-smoke:
	sh scripts/release-smoke.sh amd64 $(DIST)/rig-linux-amd64
	sh scripts/release-smoke.sh arm64 $(DIST)/rig-linux-arm64 qemu-aarch64-static
