# internal/pci (issue 9): fuzz the one PCI address parser.
.PHONY: fuzz-pci
fuzz-pci: deps
	$(GO) test ./internal/pci -run '^$$' -fuzz FuzzParse -fuzztime 30s
