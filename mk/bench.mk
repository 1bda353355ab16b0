# make bench: rig's embedded dataplane against a reference on the same vdevs
# and cores: dpdk-testpmd 22.11, or rig itself in another configuration (the
# 64-flow generator against rig's single flow). Each row runs BENCH_RUNS
# paired rounds (rig and the reference back to back, which goes first
# alternating per round) and is judged from the paired ratios rig/reference
# with a one-sided sign test: MET when the ratio is above the row's target
# with p <= 0.05 (7 rounds: all 7; 10: 9 of 10), NOT MET when it is below
# with the same confidence, inconclusive otherwise. Prints n, the median
# ratio, min..max, IQR, rounds above target and both p-values per row, and
# writes the verdict table, dated, to BENCH_MD (what the README's figures
# are pasted from). Exit 1: a run failed or a target is NOT MET; 3: none
# failed but some row is inconclusive (rerun with more rounds).
# The row "rig check through OvS" starts a private OvS-DPDK in a network
# namespace of its own and compares `rig check` with testpmd driving the same
# two vhost-user ports through the same flow (target 0.95x).
# BENCH_ONLY=a,b runs only the rows whose names contain a or b
# (bin/benchcmp -list names them).
# Not part of `make test`. Needs root and free 2 MiB hugepages (reserved here
# if missing, restored afterwards). Numbers from a machine that is busy with
# anything else are noise: run it on a quiet one.
BENCH_RUNS     ?= 7
BENCH_DURATION ?= 5s
BENCH_PAGES    ?= 512
BENCH_ONLY     ?=
BENCH_MD       ?= bin/bench.md

.PHONY: bench
bench: build
	$(GO) build $(GOTAGS) -o bin/benchcmp ./bench/cmd/benchcmp
	@hp=/sys/kernel/mm/hugepages/hugepages-2048kB; old=$$(cat $$hp/nr_hugepages); \
	  free=$$(cat $$hp/free_hugepages); \
	  if [ $$free -lt $(BENCH_PAGES) ]; then echo $$((old + $(BENCH_PAGES) - free)) > $$hp/nr_hugepages; fi; \
	  ./bin/benchcmp -rig ./$(BIN) -runs $(BENCH_RUNS) -duration $(BENCH_DURATION) -only '$(BENCH_ONLY)' -md $(BENCH_MD); rc=$$?; \
	  echo $$old > $$hp/nr_hugepages; exit $$rc
