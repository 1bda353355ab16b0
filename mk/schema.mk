# make schemas: regenerate docs/schema/*.json, the JSON Schema of every
# `-o json` document rig prints, from the Go types it prints
# (cmd/rig/jsonschema_test.go; its TestJSONSchemasUpToDate fails in
# make test when a checked-in schema is stale, and every document the
# tests make rig print is validated against its schema).
.PHONY: schemas
schemas:
	$(GO) test -count=1 -run TestJSONSchemasUpToDate ./cmd/rig -update-schemas
