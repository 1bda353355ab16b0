# make bench: dpdk-testpmd 22.11 vs rig's embedded dataplane, alternating runs on
# the same vdevs and cores; prints Mpps per port and the ratio (median of runs).
# The row "rig check through OvS" starts a private OvS-DPDK in a network
# namespace of its own and compares `rig check` with testpmd driving the same
# two vhost-user ports through the same flow (paired ratio, target 0.95x).
# Not part of `make test`. Needs root and free 2 MiB hugepages (reserved here
# if missing, restored afterwards).
BENCH_RUNS     ?= 5
BENCH_DURATION ?= 5s
BENCH_PAGES    ?= 512

.PHONY: bench
bench: build
	$(GO) build $(GOTAGS) -o bin/benchcmp ./bench/cmd/benchcmp
	@hp=/sys/kernel/mm/hugepages/hugepages-2048kB; old=$$(cat $$hp/nr_hugepages); \
	  free=$$(cat $$hp/free_hugepages); \
	  if [ $$free -lt $(BENCH_PAGES) ]; then echo $$((old + $(BENCH_PAGES) - free)) > $$hp/nr_hugepages; fi; \
	  ./bin/benchcmp -rig ./$(BIN) -runs $(BENCH_RUNS) -duration $(BENCH_DURATION); rc=$$?; \
	  echo $$old > $$hp/nr_hugepages; exit $$rc
