# make demo-full: the three user stories on a machine without a SmartNIC.
#  1. hugepages (as `make demo`), 2. BlueField-2 bring-up on the fixture host
#  with the firmware simulator (plan -> up: exit 3 power cycle -> power cycle
#  -> up: all ok), 3. OvS-DPDK on a private instance with vdev ports, verified,
#  4. a 3 s throughput check through a memif pair.
DEMO_DIR ?= /tmp/rig-demo

.PHONY: demo-full
demo-full: demo
	@rm -rf $(DEMO_DIR) && mkdir -p $(DEMO_DIR)
	@echo "=== BlueField-2 bring-up: fixture host + firmware simulator"
	./$(BIN) fwsim init --fw-sim $(DEMO_DIR)/fw.json --device 0000:03:00.0=a2d6:separated
	./$(BIN) plan -p bf2-dpu --root testdata/hosts/bf2-dpu-arm --fw-sim $(DEMO_DIR)/fw.json
	./$(BIN) up -p bf2-dpu --root testdata/hosts/bf2-dpu-arm --fw-sim $(DEMO_DIR)/fw.json --lock-file $(DEMO_DIR)/lock; \
	  rc=$$?; [ $$rc -eq 3 ] || { echo "want exit 3 (power cycle required), got $$rc"; exit 1; }
	./$(BIN) fwsim power-cycle --fw-sim $(DEMO_DIR)/fw.json
	./$(BIN) up -p bf2-dpu --root testdata/hosts/bf2-dpu-arm --fw-sim $(DEMO_DIR)/fw.json --lock-file $(DEMO_DIR)/lock
	@echo "=== OvS-DPDK: private instance, netdev bridge with DPDK vdev ports"
	./$(BIN) ovs daemon start --rundir $(DEMO_DIR)/ovs
	./$(BIN) up -p ovs-vdev --rundir $(DEMO_DIR)/ovs --lock-file $(DEMO_DIR)/lock && \
	  ./$(BIN) up -p ovs-vdev --rundir $(DEMO_DIR)/ovs --lock-file $(DEMO_DIR)/lock && \
	  ./$(BIN) ovs status --rundir $(DEMO_DIR)/ovs; \
	  rc=$$?; ./$(BIN) ovs daemon stop --rundir $(DEMO_DIR)/ovs; exit $$rc
	@echo "=== Throughput check: generator -> memif -> receiver, 3 s"
	./$(BIN) bench loop --duration 3s --min-mpps 1 --max-loss 0
