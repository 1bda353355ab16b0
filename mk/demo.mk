# make demo-ovs: OvS-DPDK proven with traffic (playbook ovs-check) on a private
#  instance: plan, up (hugepages, bridge, then the check's Mpps through the
#  bridge), up again (0 changes; the check runs again), down (undone from
#  rig's records, kept in DEMO_DIR, not the host's /var/lib/rig). The instance runs in
#  its own network namespace (DEMO_NETNS) so that another netdev-datapath OvS
#  on the host (its shared ovs-netdev tap) cannot collide with it; it is
#  stopped, and the namespace removed, also when a step fails.
# make demo-full: the user stories on a machine without a SmartNIC.
#  1. the check (as `make demo-ovs`), 2. BlueField-2 mode and RDMA on the fixture
#  host with the firmware simulator (plan -> up: exit 3 power cycle -> power
#  cycle -> up: all ok; the playbook's hugepages, OvS and check need a machine:
#  `make demo` runs all of it in a lab), 3. OvS-DPDK on a private instance with vdev ports, verified.
#  (The former memif loop is replaced by the check through OvS in 1.)
DEMO_DIR   ?= /tmp/rig-demo
DEMO_NETNS ?= rig-demo
# ovs-vswitchd's EAL makes the default-prefix runtime dir even --in-memory
# and leaves it empty: removed after the demo when the demo made it
DPDK_RTE   := /var/run/dpdk/rte

.PHONY: demo-check
demo-check:
	@rm -rf $(DEMO_DIR)/check && mkdir -p $(DEMO_DIR)
	@ip netns add $(DEMO_NETNS) && ip -n $(DEMO_NETNS) link set lo up
	@X="ip netns exec $(DEMO_NETNS) env RIG_STATE_FILE=$(DEMO_DIR)/state.json ./$(BIN)"; D=$(DEMO_DIR)/check; L="--lock-file $(DEMO_DIR)/lock"; \
	  rte=$$( [ -e $(DPDK_RTE) ] && echo kept ); base=$$( [ -e $(dir $(DPDK_RTE)) ] && echo kept ); \
	  set -x; $$X ovs daemon start --rundir $$D && \
	  $$X plan -p ovs-check --rundir $$D && \
	  $$X up -p ovs-check --rundir $$D $$L && \
	  { set +x; echo "--- second run: expect 0 changes; the check runs again (traffic is not a change)"; set -x; } && \
	  $$X up -p ovs-check --rundir $$D $$L && \
	  { set +x; echo "--- rig down: what up configured, undone from its records"; set -x; } && \
	  $$X down -p ovs-check --rundir $$D $$L; \
	  rc=$$?; $$X ovs daemon stop --rundir $$D; ip netns del $(DEMO_NETNS); \
	  { set +x; } 2>/dev/null; [ -n "$$rte" ] || rmdir $(DPDK_RTE) 2>/dev/null; [ -n "$$base" ] || rmdir $(dir $(DPDK_RTE)) 2>/dev/null; exit $$rc

.PHONY: demo-full
demo-full: demo-ovs
	@rm -rf $(DEMO_DIR) && mkdir -p $(DEMO_DIR)
	@echo "=== BlueField-2 bring-up: fixture host + firmware simulator"
	./$(BIN) fwsim init --fw-sim $(DEMO_DIR)/fw.json --device 0000:03:00.0=a2d6:separated
	./$(BIN) plan -p bf2-dpu --root testdata/hosts/bf2-dpu-arm --fw-sim $(DEMO_DIR)/fw.json --state-file $(DEMO_DIR)/bf2-state.json --only mode,rdma
	./$(BIN) up -p bf2-dpu --root testdata/hosts/bf2-dpu-arm --fw-sim $(DEMO_DIR)/fw.json --state-file $(DEMO_DIR)/bf2-state.json --lock-file $(DEMO_DIR)/lock --only mode,rdma; \
	  rc=$$?; [ $$rc -eq 3 ] || { echo "want exit 3 (power cycle required), got $$rc"; exit 1; }
	./$(BIN) fwsim power-cycle --fw-sim $(DEMO_DIR)/fw.json
	./$(BIN) up -p bf2-dpu --root testdata/hosts/bf2-dpu-arm --fw-sim $(DEMO_DIR)/fw.json --state-file $(DEMO_DIR)/bf2-state.json --lock-file $(DEMO_DIR)/lock --only mode,rdma
	@echo "=== OvS-DPDK: private instance, netdev bridge with DPDK vdev ports (hugepages-2m first: ovs-vdev has no pool of its own; given back after)"
	rte=$$( [ -e $(DPDK_RTE) ] && echo kept ); base=$$( [ -e $(dir $(DPDK_RTE)) ] && echo kept ); \
	  export RIG_STATE_FILE=$(DEMO_DIR)/state.json; \
	  ./$(BIN) up -p hugepages-2m --lock-file $(DEMO_DIR)/lock && \
	  ./$(BIN) ovs daemon start --rundir $(DEMO_DIR)/ovs && \
	  ./$(BIN) up -p ovs-vdev --rundir $(DEMO_DIR)/ovs --lock-file $(DEMO_DIR)/lock && \
	  ./$(BIN) up -p ovs-vdev --rundir $(DEMO_DIR)/ovs --lock-file $(DEMO_DIR)/lock && \
	  ./$(BIN) ovs status --rundir $(DEMO_DIR)/ovs; \
	  rc=$$?; ./$(BIN) ovs daemon stop --rundir $(DEMO_DIR)/ovs; ./$(BIN) down -p hugepages-2m --lock-file $(DEMO_DIR)/lock > /dev/null || rc=1; \
	  [ -n "$$rte" ] || rmdir $(DPDK_RTE) 2>/dev/null; [ -n "$$base" ] || rmdir $(dir $(DPDK_RTE)) 2>/dev/null; exit $$rc
