# mlxconfig: fuzz the firmware tools' output parsers and the
# failure classifier.
.PHONY: fuzz-mlxconfig
fuzz-mlxconfig: deps
	for f in FuzzParseQuery FuzzParsePrivHost FuzzClassifyFailure; do \
	  $(GO) test ./mlxconfig -run '^$$' -fuzz "^$$f$$" -fuzztime 15s || exit 1; \
	done
