package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// listedPackage is what `go list -json` says about one package.
type listedPackage struct {
	ImportPath     string
	Dir            string
	Imports        []string
	Deps           []string
	GoFiles        []string
	CgoFiles       []string
	IgnoredGoFiles []string // the build-tagged files of another build (run_nocgo.go under cgo)
	Module         *struct{ Path string }
}

// rigPackages lists rig's own packages with `go list -deps -json ./...`
// run at the module root.
func rigPackages(t *testing.T) map[string]listedPackage {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("the import rules need the go tool: %v", err)
	}
	cmd := exec.Command(goBin, "list", "-deps", "-json", "./...")
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	pkgs := map[string]listedPackage{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		if p.Module != nil && p.Module.Path == "rig" {
			pkgs[p.ImportPath] = p
		}
	}
	if _, ok := pkgs["rig/provision"]; !ok || len(pkgs) < 5 {
		t.Fatalf("go list found %d rig packages, not rig/provision among them", len(pkgs))
	}
	return pkgs
}

func under(path, dir string) bool { return path == dir || strings.HasPrefix(path, dir+"/") }

// floors are the parts of docs/architecture.md from the top down: a
// package imports only packages on a lower floor, or on its own floor
// where the part's packages build on each other (the steps, bench's
// packages, the resources, the ground). Test kits (ovs/ovstest,
// internal/testutil/...), tools (internal/cmd/..., bench/cmd/...) and
// the fleet collection's tests (ansible, test files only) are not floors: no production package may import a test kit.
var floors = []struct {
	floor int
	part  string
	pkgs  []string // a trailing "/..." takes the packages below too
}{
	{10, "face", []string{"rig/cmd/rig"}},
	{9, "step list", []string{"rig/provision/steps"}},
	{8, "steps", []string{"rig/provision/card", "rig/provision/system", "rig/provision/pcidev", "rig/provision/ovsstep", "rig/provision/check"}},
	{7, "engine", []string{"rig/provision"}},
	{6, "lab", []string{"rig/lab/..."}},
	{5, "doctor, playbooks", []string{"rig/doctor", "rig/playbooks"}},
	{4, "bench", []string{"rig/bench", "rig/bench/dataplane", "rig/bench/child", "rig/bench/search", "rig/bench/peer", "rig/bench/report", "rig/bench/plot"}},
	{3, "resources", []string{"rig/hugepages", "rig/ovs", "rig/ovs/diagnose", "rig/smartnic", "rig/mlxconfig", "rig/rshim"}},
	{2, "dpdk", []string{"rig/bench/internal/dpdk"}},
	{1, "ground", []string{"rig/internal/host", "rig/internal/pci", "rig/internal/devargs", "rig/internal/cpuset", "rig/internal/labinfo", "rig/internal/buildinfo"}},
}

// floorOf is the floor and part of package n; 0 when n is on none.
func floorOf(n string) (int, string) {
	for _, f := range floors {
		for _, p := range f.pkgs {
			if n == p || strings.HasSuffix(p, "/...") && under(n, strings.TrimSuffix(p, "/...")) {
				return f.floor, f.part
			}
		}
	}
	return 0, ""
}

// testKit says whether n is test-only code (a test kit or helpers shared by
// tests) or a tool of the build, which stand on no floor; no production
// package may import a test kit.
func testKit(n string) bool {
	return under(n, "rig/internal/testutil") || n == "rig/ovs/ovstest" || n == "rig/provision/steptest"
}

// importBreaks says which rule of docs/architecture.md package n breaks by
// importing imp, or "".
func importBreaks(n, imp string) string {
	switch {
	case imp == "rig/provision" && n != "rig/cmd/rig" && !under(n, "rig/provision"):
		return "only cmd/rig and the step packages (provision/...) may use the step engine"
	case n == "rig/provision" && imp != "rig/internal/host" && imp != "rig/internal/pci":
		return "the engine imports of rig's only internal/host and internal/pci (steps live in provision/...)"
	case n == "rig/playbooks" && under(imp, "rig/ovs"):
		return "playbooks imports no ovs package: what a playbook value means comes from internal/devargs, internal/cpuset and the resources below"
	case n == "rig/hugepages" && imp == "rig/playbooks":
		return "a resource knows its subsystem, not the playbook format"
	case under(n, "rig/internal") && !testKit(n) && under(imp, "rig") && !under(imp, "rig/internal"):
		return "the ground imports only the ground"
	case (n == "rig/internal/host" || n == "rig/internal/buildinfo" || n == "rig/internal/cpuset" || n == "rig/internal/pci") && under(imp, "rig"):
		return "this piece of the ground imports nothing of rig's"
	case testKit(imp) && !testKit(n):
		return "a test kit is for tests only"
	}
	nf, np := floorOf(n)
	inf, ip := floorOf(imp)
	if nf > 0 && inf > nf {
		return fmt.Sprintf("it runs back up a floor: %s (floor %d) is above %s (floor %d)", ip, inf, np, nf)
	}
	return ""
}

// TestImportRules checks the layout of docs/architecture.md: the floors
// (a package imports only below it or beside it on its floor), the engine
// that imports only the ground, playbooks without ovs, bench's core
// without cgo, and cgo only in bench/internal/dpdk.
func TestImportRules(t *testing.T) {
	pkgs := rigPackages(t)
	for _, n := range slices.Sorted(maps.Keys(pkgs)) {
		p := pkgs[n]
		if f, _ := floorOf(n); f == 0 && !testKit(n) && !under(n, "rig/internal/cmd") && !under(n, "rig/bench/cmd") && !strings.HasPrefix(n, "rig/cmd/rig/") && n != "rig/ansible" {
			t.Errorf("%s is on no floor of docs/architecture.md: add it to floors in this file and to the map", n)
		}
		for _, imp := range p.Imports {
			if why := importBreaks(n, imp); under(imp, "rig") && why != "" {
				t.Errorf("%s imports %s: %s", n, imp, why)
			}
		}
		if len(p.CgoFiles) > 0 && n != "rig/bench/internal/dpdk" {
			t.Errorf("%s has cgo files %v: cgo lives in bench/internal/dpdk only", n, p.CgoFiles)
		}
	}
	for _, d := range pkgs["rig/bench"].Deps {
		if len(pkgs[d].CgoFiles) > 0 {
			via, _ := importsVia(pkgs, "rig/bench", d)
			t.Errorf("rig/bench pulls in %s, which has cgo files (via %s): what a run is stays pure Go; the cgo side is bench/dataplane's", d, strings.Join(via, " -> "))
		}
	}
	if len(pkgs["rig/bench/internal/dpdk"].CgoFiles) == 0 {
		t.Errorf("bench/internal/dpdk has no cgo files: is the rule still checking the right package?")
	}
}

// importsVia finds a chain of imports from one rig package to another
// (both ends included); ok is false when from does not depend on to.
func importsVia(pkgs map[string]listedPackage, from, to string) (via []string, ok bool) {
	seen := map[string]bool{}
	var walk func(n string) []string
	walk = func(n string) []string {
		if n == to {
			return []string{n}
		}
		if seen[n] {
			return nil
		}
		seen[n] = true
		for _, imp := range pkgs[n].Imports {
			if chain := walk(imp); chain != nil {
				return append([]string{n}, chain...)
			}
		}
		return nil
	}
	via = walk(from)
	return via, via != nil
}

// The rules catch what they are for: an import up a floor, into the engine
// from a resource, the engine reaching for a step's world, playbooks
// reading ovs, a test kit in production code.
func TestImportRulesCatch(t *testing.T) {
	for _, c := range [][2]string{
		{"rig/ovs", "rig/bench"}, {"rig/smartnic", "rig/provision"}, {"rig/provision", "rig/playbooks"},
		{"rig/playbooks", "rig/ovs/diagnose"}, {"rig/lab", "rig/provision/steps"}, {"rig/bench", "rig/playbooks"},
		{"rig/internal/devargs", "rig/smartnic"}, {"rig/ovs", "rig/ovs/ovstest"}, {"rig/provision/check", "rig/cmd/rig"},
	} {
		if importBreaks(c[0], c[1]) == "" {
			t.Errorf("%s importing %s passes the rules", c[0], c[1])
		}
	}
	for _, c := range [][2]string{{"rig/provision/check", "rig/bench/search"}, {"rig/ovs/diagnose", "rig/ovs"}, {"rig/bench/peer", "rig/bench"}, {"rig/lab", "rig/ovs"}} {
		if why := importBreaks(c[0], c[1]); why != "" {
			t.Errorf("%s importing %s: %s; the map allows it", c[0], c[1], why)
		}
	}
}

// maxPackageLines is the most production lines (non-test Go files, all
// lines) a package may have; cmd/rig is allowed its size for now.
const maxPackageLines = 3700

// TestPackageSize fails a package over maxPackageLines: a hall that big
// is cut along its seams (docs/architecture.md).
func TestPackageSize(t *testing.T) {
	pkgs := rigPackages(t)
	for _, n := range slices.Sorted(maps.Keys(pkgs)) {
		p := pkgs[n]
		if n == "rig/cmd/rig" {
			continue
		}
		lines := 0
		for _, f := range slices.Concat(p.GoFiles, p.CgoFiles, p.IgnoredGoFiles) {
			b, err := os.ReadFile(filepath.Join(p.Dir, f))
			if err != nil {
				t.Fatal(err)
			}
			lines += bytes.Count(b, []byte("\n"))
		}
		if lines > maxPackageLines {
			t.Errorf("%s has %d production lines, over %d: cut it along its seams (docs/architecture.md)", n, lines, maxPackageLines)
		}
	}
}

// TestNoLongFunctions keeps every Go function outside tests at 80 lines or
// fewer (docs/architecture.md): a longer one is split by role.
func TestNoLongFunctions(t *testing.T) {
	const limit = 80
	fset := token.NewFileSet()
	var long []string
	err := filepath.WalkDir("../..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			if fd, ok := decl.(*ast.FuncDecl); ok && fd.Body != nil {
				if n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1; n > limit {
					long = append(long, fmt.Sprintf("%s: %s is %d lines", strings.TrimPrefix(p, "../../"), fd.Name.Name, n))
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(long) > 0 {
		t.Errorf("functions over %d lines (split them by role):\n%s", limit, strings.Join(long, "\n"))
	}
}

// TestRootTestNames: a test that calls a privileged gate
// (testutil.RequirePrivileged, or a helper that reserves real hugepages,
// starts a real OvS or a DPDK dataplane) is named TestPrivileged…, so that
// `go test -run Privileged` selects exactly the tests that need root.
func TestRootTestNames(t *testing.T) {
	gates := map[string]bool{"RequirePrivileged": true, "needDataplane": true, "ReserveFor": true, "Start": true}
	fset := token.NewFileSet()
	var wrong []string
	err := filepath.WalkDir("../..", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil || !strings.HasPrefix(fd.Name.Name, "Test") || strings.HasPrefix(fd.Name.Name, "TestPrivileged") {
				continue
			}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				name := ""
				switch fn := call.Fun.(type) {
				case *ast.Ident:
					name = fn.Name
				case *ast.SelectorExpr:
					if x, ok := fn.X.(*ast.Ident); ok && (x.Name == "testutil" || x.Name == "hugetest" || x.Name == "ovstest") {
						name = fn.Sel.Name
					}
				}
				if gates[name] {
					wrong = append(wrong, fmt.Sprintf("%s: %s calls %s", strings.TrimPrefix(p, "../../"), fd.Name.Name, name))
				}
				return true
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(wrong) > 0 {
		t.Errorf("privileged tests not named TestPrivileged…:\n%s", strings.Join(wrong, "\n"))
	}
}
