# rig — see README.md. `make demo` and `make test` work on a fresh Debian 12 as root.
GO        ?= go
BIN       := bin/rig
# Every system package rig, its tests and its benchmark need.
# The static link (bench/internal/dpdk/link_static.go) takes the .a archives
# of the -dev packages after libdpdk-dev (which depends on them too).
DEB_PKGS  := dpdk dpdk-dev libdpdk-dev openvswitch-switch-dpdk pkg-config iproute2 util-linux gcc libc6-dev \
	libibverbs-dev libnl-3-dev libnl-route-3-dev libpcap0.8-dev libnuma-dev libbsd-dev libmd-dev libjansson-dev
TEST_TIMEOUT ?= 25m
# DPDK is linked statically into rig (bench/internal/dpdk/link_static.go),
# and so are rdma-core, libpcap, libnuma and the rest: rig needs only glibc
# at run time, and the PMDs' per-packet paths have no __tls_get_addr. cgo
# needs CGO_LDFLAGS_ALLOW for -Wl,--whole-archive, which keeps the PMDs'
# (and rdma-core's mlx5 provider's) registration constructors. GO_TAGS=
# builds against the shared libraries instead (what plain `go build` does).
# make release (mk/release.mk): fully static amd64 and arm64 binaries in
# dist/ (glibc linked in too: no glibc version floor).
GO_TAGS   ?= dpdkstatic
export CGO_LDFLAGS_ALLOW := -Wl,--(no-)?whole-archive
GOTAGS    := $(if $(GO_TAGS),-tags $(GO_TAGS),)

.PHONY: all deps build test unit demo demo-ovs bench fuzz vet clean

all: build

# Installs what is missing, and is a quick no-op when everything is there.
deps:
	@missing=""; for p in $(DEB_PKGS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "make deps: installing$$missing"; \
	  if [ "$$(id -u)" != 0 ]; then echo "make deps: need root to apt-get install$$missing" >&2; exit 1; fi; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi

# rig version names the commit built: this environment builds with
# -buildvcs=false (GOFLAGS), so the commit is stamped here as make release does
build: deps
	$(GO) build $(GOTAGS) -ldflags "-X rig/internal/buildinfo.version=$(VERSION) -X rig/internal/buildinfo.commit=$(COMMIT)" -o $(BIN) ./cmd/rig

vet: deps
	$(GO) vet $(GOTAGS) ./...

# Whole suite: unit + privileged integration tests (skipped with a reason when
# not root). -p 2: two test binaries at once, so that one package's build and
# unit tests overlap another's privileged tests; privileged tests never run
# two at a time (testutil.RequirePrivileged takes a host-wide lock: they share
# the CPUs their dataplanes poll on, the hugepage pool and OvS's binaries).
# internal/cmd/testsummary runs go test -json: plain go test's output, then
# the ten slowest tests and the wall time; every test's whole output (-v)
# goes to TEST_LOG.
TEST_LOG ?= bin/test-output.log
test: deps
	$(GO) vet $(GOTAGS) ./...
	@mkdir -p $(dir $(TEST_LOG))
	$(GO) run ./internal/cmd/testsummary -log $(TEST_LOG) $(GOTAGS) -p 2 -count=1 -timeout $(TEST_TIMEOUT) ./...

# make demo: the lab story (scripts/demo-lab.sh): a virtual BlueField-2 as its
# three machines, rig bench serve on its host and peer, rig up (exit 3), rig lab
# power-cycle, rig up (ok, the check's Mpps through the three machines), rig up
# again (0 changes), lab down (the serves too). make demo-ovs: the check on a private OvS (mk/demo.mk).
DEMO_LAB ?= demo
demo:
	@$(MAKE) -s --no-print-directory build
	@sh scripts/demo-lab.sh ./$(BIN) $(DEMO_LAB)

demo-ovs: build
	@$(MAKE) --no-print-directory demo-check

fuzz: deps
	$(GO) test ./playbooks -run '^$$' -fuzz FuzzParse -fuzztime 30s

clean:
	rm -rf bin dist build

-include mk/*.mk
