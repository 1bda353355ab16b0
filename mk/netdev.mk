# Ports named by netdev (issue 11): fuzz the phys_port_name parser and the
# mlx5_args check.
.PHONY: fuzz-netdev
fuzz-netdev: deps
	$(GO) test ./smartnic -run '^$$' -fuzz '^FuzzParsePhysPortName$$' -fuzztime 20s
	$(GO) test ./playbooks -run '^$$' -fuzz '^FuzzCheckMLX5Args$$' -fuzztime 20s
