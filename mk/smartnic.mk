# SmartNIC inventory (smartnic): fuzz the sysfs attribute parsers.
.PHONY: fuzz-smartnic
fuzz-smartnic: deps
	for f in FuzzParsePortState FuzzParseLinkSpeed FuzzParseEswitchShow FuzzParseNetFlags; do \
	  $(GO) test ./smartnic -run '^$$' -fuzz "^$$f$$" -fuzztime 15s || exit 1; \
	done

# Regenerate the fixture host roots and the inventory golden files.
.PHONY: fixtures-smartnic
fixtures-smartnic:
	bash testdata/hosts/mkhosts.sh
	$(GO) test ./cmd/rig -run TestInventoryGolden -update
