# OvS-DPDK package (issue 3): fuzz the ovs-vsctl --format=json parser.
.PHONY: fuzz-ovs
fuzz-ovs: deps
	$(GO) test ./ovs -run '^$$' -fuzz FuzzParseTables -fuzztime 30s

# Datapath flows (dpctl/dump-flows -m, ovs/dpflows.go): fuzz the line parser.
.PHONY: fuzz-dpflows
fuzz-dpflows: deps
	$(GO) test ./ovs -run '^$$' -fuzz '^FuzzParseDPFlows$$' -fuzztime 30s
