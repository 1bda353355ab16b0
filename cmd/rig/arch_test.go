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
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// listedPackage is what `go list -json` says about one package.
type listedPackage struct {
	ImportPath string
	Imports    []string
	CgoFiles   []string
	Module     *struct{ Path string }
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

// TestImportRules checks the layout of docs/architecture.md: who may
// import what, and where cgo may live.
func TestImportRules(t *testing.T) {
	pkgs := rigPackages(t)
	names := make([]string, 0, len(pkgs))
	for n := range pkgs {
		names = append(names, n)
	}
	sort.Strings(names)
	resources := []string{"rig/hugepages", "rig/ovs", "rig/smartnic", "rig/mlxconfig"}
	for _, n := range names {
		p := pkgs[n]
		for _, imp := range p.Imports {
			switch {
			case imp == "rig/provision" && n != "rig/cmd/rig" && !under(n, "rig/provision"):
				t.Errorf("%s imports rig/provision: only cmd/rig and the step packages may use the step engine", n)
			case n == "rig/provision" && under(imp, "rig") && imp != "rig/internal/host" && imp != "rig/internal/pci":
				t.Errorf("provision imports %s: the engine imports of rig's only internal/host and internal/pci (steps live in provision/...)", imp)
			case n == "rig/internal/host" && under(imp, "rig"):
				t.Errorf("internal/host imports %s: the host seam imports nothing of rig's", imp)
			case n == "rig/internal/buildinfo" && under(imp, "rig"):
				t.Errorf("internal/buildinfo imports %s: build information imports nothing of rig's", imp)
			case n == "rig/hugepages" && imp == "rig/playbooks":
				t.Errorf("hugepages imports rig/playbooks: a resource knows its subsystem, not the playbook format")
			}
			for _, r := range resources {
				if n == r && (under(imp, "rig/bench") || under(imp, "rig/cmd") || imp == "rig/provision" || under(imp, "rig/lab")) {
					t.Errorf("resource %s imports %s: resources import internal/host and each other only", n, imp)
				}
			}
		}
		if len(p.CgoFiles) > 0 && n != "rig/bench/internal/dpdk" {
			t.Errorf("%s has cgo files %v: cgo lives in bench/internal/dpdk only", n, p.CgoFiles)
		}
	}
	if len(pkgs["rig/bench/internal/dpdk"].CgoFiles) == 0 {
		t.Errorf("bench/internal/dpdk has no cgo files: is the rule still checking the right package?")
	}
	if via, ok := importsVia(pkgs, "rig/bench", "rig/bench/internal/dpdk"); ok {
		t.Errorf("rig/bench pulls in bench/internal/dpdk (via %s): what a run is stays pure Go; the cgo side is bench/dataplane's", strings.Join(via, " -> "))
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
