# OvS-DPDK package (issue 3): fuzz the ovs-vsctl --format=json parser.
.PHONY: fuzz-ovs
fuzz-ovs: deps
	$(GO) test ./ovs -run '^$$' -fuzz FuzzParseTables -fuzztime 30s
