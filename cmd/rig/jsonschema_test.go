package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	invopop "github.com/invopop/jsonschema"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"rig/bench"
	"rig/bench/search"
	"rig/doctor"
	"rig/lab"
	"rig/lab/fwsim"
	"rig/ovs"
	"rig/ovs/diagnose"
	"rig/provision"
	"rig/smartnic"
)

// JSON Schemas of every -o json document rig prints: generated from the Go
// types emitted (github.com/invopop/jsonschema), checked in under
// docs/schema (one file per schemaVersion), and every document the tests
// make rig print is validated against its schema
// (github.com/santhosh-tekuri/jsonschema): the rig and runBin helpers call
// validateJSONOutput. Regenerate after changing an emitted type:
//
//	go test ./cmd/rig -run TestJSONSchemasUpToDate -update-schemas
//
// (make schemas; go generate ./cmd/rig).
//
//go:generate go test -run TestJSONSchemasUpToDate -update-schemas .

var updateSchemas = flag.Bool("update-schemas", false, "rewrite docs/schema/*.json from the Go types")

// jsonOutputs maps each schemaVersion rig prints to the Go type printed.
var jsonOutputs = map[string]any{
	bench.SchemaVersion:           bench.Result{},
	search.NDRSchemaVersion:       search.NDRReport{},
	search.SweepSchemaVersion:     search.Sweep{},
	benchPlanSchema:               benchPlan{},
	benchProfilesSchema:           benchProfilesReport{},
	lineRateSchema:                lineRateReport{},
	provision.ReportSchemaVersion: provision.Report{},
	"rig.check/v2":                checkReport{},
	doctor.SchemaVersion:          doctor.Report{},
	fwsim.Schema:                  fwsim.State{},
	fwsimPowerCycleSchema:         fwsimPowerCycleReport{},
	fwsimRebootSchema:             fwsimRebootReport{},
	hugepagesShowSchema:           hugepagesShowReport{},
	hugepagesCleanSchema:          hugepagesCleanReport{},
	smartnic.SchemaVersion:        smartnic.Inventory{},
	mstStatusSchema:               mstStatusReport{},
	rdmaLinksSchema:               rdmaLinksReport{},
	lab.StatusSchema:              lab.Status{},
	labListSchema:                 labListReport{},
	labDownSchema:                 labDownReport{},
	lab.RebootSchema:              lab.RebootReport{},
	"rig.lab.power-cycle/v1":      lab.PowerCycleReport{},
	modeSchema:                    modeReport{},
	ovs.DaemonStatusSchema:        ovs.DaemonStatus{},
	diagnose.StatusSchema:         diagnose.Status{},
	playbooksSchema:               playbooksReport{},
	versionSchema:                 versionReport{},
}

const schemaDir = "../../docs/schema"

// schemaFile is the checked-in schema of a schemaVersion:
// rig.bench.sweep/v1 -> docs/schema/rig.bench.sweep.v1.json.
func schemaFile(version string) string {
	return filepath.Join(schemaDir, strings.ReplaceAll(version, "/", ".")+".json")
}

// generateSchema reflects v's type into a JSON Schema (2020-12): every
// field without omitempty is required, no property outside the type, and
// a nil slice, map or pointer (which encoding/json prints as null) may be
// null unless omitempty leaves it out.
func generateSchema(version string, v any) ([]byte, error) {
	r := &invopop.Reflector{ExpandedStruct: true}
	s := r.Reflect(v)
	s.ID = invopop.ID("https://rig.invalid/schema/" + strings.ReplaceAll(version, "/", ".") + ".json")
	s.Title = version
	s.Description = fmt.Sprintf("rig -o json document %s (generated from the Go type %T by cmd/rig/jsonschema_test.go; do not edit)", version, v)
	allowNull(s, reflect.TypeOf(v), s.Definitions, map[reflect.Type]bool{})
	if p, ok := s.Properties.Get("schemaVersion"); ok {
		p.Const = version // the document names its own schema
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// allowNull walks struct type t beside its schema s: a property whose
// field is a slice, map, pointer or interface, with no omitempty, may be
// null too. Named structs are patched once, in defs.
func allowNull(s *invopop.Schema, t reflect.Type, defs invopop.Definitions, seen map[reflect.Type]bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || s == nil || s.Properties == nil {
		return
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			allowNull(s, f.Type, defs, seen) // embedded: its fields are s's
			if f.Type.Kind() == reflect.Pointer {
				optional(s, f.Type.Elem()) // a nil embedded pointer prints none of them
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		prop, ok := s.Properties.Get(name)
		if !ok {
			continue
		}
		ft := f.Type
		switch ft.Kind() {
		case reflect.Slice, reflect.Map, reflect.Pointer, reflect.Interface:
			if !strings.Contains(opts, "omitempty") && ft.Kind() != reflect.Interface && ft != reflect.TypeOf(json.RawMessage{}) {
				s.Properties.Set(name, &invopop.Schema{AnyOf: []*invopop.Schema{{Type: "null"}, prop}})
			}
		}
		nested(prop, ft, defs, seen)
	}
}

// optional drops struct t's fields from s's required list.
func optional(s *invopop.Schema, t reflect.Type) {
	names := map[string]bool{}
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name == "" {
			name = t.Field(i).Name
		}
		names[name] = true
	}
	var req []string
	for _, r := range s.Required {
		if !names[r] {
			req = append(req, r)
		}
	}
	s.Required = req
}

// nested patches the struct types inside a property: a named struct's
// definition (once), an unnamed struct's inline schema.
func nested(prop *invopop.Schema, t reflect.Type, defs invopop.Definitions, seen map[reflect.Type]bool) {
	for {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array:
			t = t.Elem()
			if prop != nil && prop.Items != nil && t.Kind() != reflect.Pointer {
				prop = prop.Items
			}
			continue
		case reflect.Map:
			t = t.Elem()
			if prop != nil && prop.AdditionalProperties != nil {
				prop = prop.AdditionalProperties
			}
			continue
		}
		break
	}
	if t.Kind() != reflect.Struct {
		return
	}
	if t.Name() == "" {
		allowNull(prop, t, defs, seen)
		return
	}
	if seen[t] {
		return
	}
	seen[t] = true
	if d, ok := defs[t.Name()]; ok {
		allowNull(d, t, defs, seen)
	}
}

// The checked-in schemas are what the Go types generate now, one for
// each schemaVersion, and no other file is in docs/schema.
func TestJSONSchemasUpToDate(t *testing.T) {
	want := map[string]bool{}
	for version, v := range jsonOutputs {
		b, err := generateSchema(version, v)
		if err != nil {
			t.Fatalf("%s: %v", version, err)
		}
		p := schemaFile(version)
		want[filepath.Base(p)] = true
		if *updateSchemas {
			if err := os.MkdirAll(schemaDir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		old, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(old, b) {
			t.Errorf("%s is stale or missing (%v): regenerate with `make schemas`", p, err)
		}
	}
	ents, _ := os.ReadDir(schemaDir)
	for _, e := range ents {
		if !want[e.Name()] {
			t.Errorf("%s/%s: no -o json document has this schema; remove it (or add its type to jsonOutputs)", schemaDir, e.Name())
		}
	}
}

var schemaCompiler = sync.OnceValues(func() (map[string]*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	out := map[string]*jsonschema.Schema{}
	for version := range jsonOutputs {
		p, err := filepath.Abs(schemaFile(version))
		if err != nil {
			return nil, err
		}
		s, err := c.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("compile %s: %w", p, err)
		}
		out[version] = s
	}
	return out, nil
})

// validateJSONOutput validates what rig printed with -o json against the
// schema its schemaVersion names; it does nothing for other output (text,
// csv, an empty stdout). A JSON document with an unknown or no
// schemaVersion is an error.
func validateJSONOutput(t *testing.T, args []string, stdout string) {
	t.Helper()
	for _, e := range jsonOutputErrors(args, stdout) {
		t.Errorf("rig %s: %s", strings.Join(args, " "), e)
	}
}

// jsonOutputErrors is validateJSONOutput's findings.
func jsonOutputErrors(args []string, stdout string) []string {
	if !jsonRequested(args) || !strings.HasPrefix(strings.TrimSpace(stdout), "{") {
		return nil
	}
	schemas, err := schemaCompiler()
	if err != nil {
		return []string{"JSON Schemas: " + err.Error()}
	}
	var errs []string
	dec := json.NewDecoder(strings.NewReader(stdout))
	for dec.More() {
		var doc any
		if err := dec.Decode(&doc); err != nil {
			return errs // not JSON after all (a test of broken output checks that itself)
		}
		m, _ := doc.(map[string]any)
		version, _ := m["schemaVersion"].(string)
		s, ok := schemas[version]
		if !ok {
			errs = append(errs, fmt.Sprintf("-o json document with schemaVersion %q: no schema (jsonschema_test.go jsonOutputs)", version))
			continue
		}
		if err := s.Validate(doc); err != nil {
			errs = append(errs, fmt.Sprintf("the -o json document does not match %s: %v", schemaFile(version), err))
		}
	}
	return errs
}

// jsonRequested reports whether args ask for -o json.
func jsonRequested(args []string) bool {
	for i, a := range args {
		switch {
		case a == "--":
			return jsonRequested(args[i+1:]) // rig lab exec NAME -- rig -o json …
		case (a == "-o" || a == "--output") && i+1 < len(args) && args[i+1] == "json":
			return true
		case a == "-ojson" || a == "-o=json" || a == "--output=json":
			return true
		}
	}
	return false
}

// Every schemaVersion a test saw validated: the documents that cheap
// in-process runs print, each against its schema (the rig helper validates
// them), and a document that breaks its schema is caught.
func TestJSONOutputsValidate(t *testing.T) {
	dir := t.TempDir()
	fw := filepath.Join(dir, "fw.json")
	for _, args := range [][]string{
		{"version", "-o", "json"},
		{"playbooks", "-o", "json"},
		{"bench", "linerate", "-o", "json"},
		{"bench", "profiles", "-o", "json"},
		{"inventory", "-o", "json", "--root", "../../testdata/hosts/bf2-dpu-arm"},
		{"mst", "status", "-o", "json", "--root", "../../testdata/hosts/bf2-dpu-arm"},
		{"rdma", "links", "-o", "json", "--root", "../../testdata/hosts/bf2-dpu-arm"},
		{"plan", "-p", "bf3-dpu", "--only", "rdma", "-o", "json", "--root", "../../testdata/hosts/bf3-dpu-arm"},
		{"fwsim", "init", "--fw-sim", fw, "--device", "0000:03:00.0=a2d6:separated"},
		{"fwsim", "show", "-o", "json", "--fw-sim", fw},
		{"fwsim", "power-cycle", "-o", "json", "--fw-sim", fw},
		{"fwsim", "reboot", "-o", "json", "--fw-sim", fw},
	} {
		code, out, errOut := rig(t, args...)
		if code != 0 || (jsonRequested(args) && !strings.Contains(out, "schemaVersion")) {
			t.Errorf("rig %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
		}
	}
	// a document that breaks its schema is reported
	for _, doc := range []string{
		`{"schemaVersion":"rig.playbooks/v1","playbooks":[1]}`,
		`{"schemaVersion":"rig.playbooks/v1","playbooks":[],"extra":true}`,
		`{"schemaVersion":"rig.playbooks/v1"}`,
		`{"schemaVersion":"rig.nothing/v1"}`,
		`{"playbooks":[]}`,
	} {
		if errs := jsonOutputErrors([]string{"-o", "json"}, doc); len(errs) != 1 {
			t.Errorf("%s: %d findings %q, want 1", doc, len(errs), errs)
		}
	}
	if errs := jsonOutputErrors([]string{"-o", "json"}, `{"schemaVersion":"rig.playbooks/v1","playbooks":null}`); len(errs) != 0 {
		t.Errorf("a nil slice (null) is refused: %q", errs)
	}
}
