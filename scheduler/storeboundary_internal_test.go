package scheduler

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// storeFiles are the store half of the package: what a store is
// (backend.go), one Redis deployment (store.go, storecontrol.go, and the
// store's side of statuses, the overview, pools, backfills, the replica
// registry, the statistics and the notification queues), the transport,
// the protocol, the Redlock combiner, and the public types its answers are
// made of (types.go).
var storeFiles = []string{"backend.go", "store.go", "storecontrol.go", "transport.go", "protocol.go", "redlock.go",
	"storestatus.go", "storeoverview.go", "storepool.go", "storebackfill.go", "storereplicas.go", "storestats.go",
	"storenotify.go", "types.go"}

// storeMayUse is every declaration of the engine's files the store half
// may name: a few public names and shared helpers. None of them is engine
// state: the job state, its memo and the Scheduler stay on the engine's
// side, and a job reaches the store as a jobSpec (values) in each request.
var storeMayUse = []string{}

// The store half reads no engine state: what it needs of a job comes in
// each request as a jobSpec, and what it learns goes back in the answers.
// Every name it takes from the engine's files is in storeMayUse, and the
// methods of its types are all in its files.
func TestStoreReadsNoEngineState(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	engine := map[string]string{} // top-level name -> engine file
	parsed := map[string]*ast.File{}
	var methods []*ast.FuncDecl // the engine files'
	methodFile := map[*ast.FuncDecl]string{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(storeFiles, f) {
			parsed[f] = af
			continue
		}
		for _, d := range af.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					engine[d.Name.Name] = f
				} else {
					methods = append(methods, d)
					methodFile[d] = f
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						engine[s.Name.Name] = f
					case *ast.ValueSpec:
						for _, n := range s.Names {
							engine[n.Name] = f
						}
					}
				}
			}
		}
	}
	if len(parsed) != len(storeFiles) {
		t.Fatalf("found %d of the store's files %v", len(parsed), storeFiles)
	}
	used := map[string][]string{}
	for name, af := range parsed {
		skip := map[*ast.Ident]bool{}
		ast.Inspect(af, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				skip[n.Name] = true // a method's name
			case *ast.SelectorExpr:
				skip[n.Sel] = true // a field or method, not a package name
			case *ast.KeyValueExpr:
				if id, ok := n.Key.(*ast.Ident); ok {
					skip[id] = true // a struct literal's field
				}
			case *ast.Ident:
				// Obj is set for names declared in the file (locals,
				// parameters, its own declarations).
				if n.Obj == nil && !skip[n] && n.Name != "_" {
					if from, ok := engine[n.Name]; ok && !slices.Contains(used[n.Name], name+" <- "+from) {
						used[n.Name] = append(used[n.Name], name+" <- "+from)
					}
				}
			}
			return true
		})
	}
	// A method of a store type (store, redlock, the requests and answers)
	// declared in an engine file is store code outside the store's files.
	storeTypes := map[string]bool{}
	for _, af := range parsed {
		for _, d := range af.Decls {
			if d, ok := d.(*ast.GenDecl); ok {
				for _, s := range d.Specs {
					if s, ok := s.(*ast.TypeSpec); ok {
						storeTypes[s.Name.Name] = true
					}
				}
			}
		}
	}
	var outside []string
	for _, m := range methods {
		recv := m.Recv.List[0].Type
		if star, ok := recv.(*ast.StarExpr); ok {
			recv = star.X
		}
		if id, ok := recv.(*ast.Ident); ok && storeTypes[id.Name] {
			outside = append(outside, "("+id.Name+")."+m.Name.Name+" in "+methodFile[m])
		}
	}
	sort.Strings(outside)
	for _, o := range outside {
		t.Errorf("a method of the store half is in an engine file: %s", o)
	}
	var bad []string
	for n, where := range used {
		if !slices.Contains(storeMayUse, n) {
			bad = append(bad, n+" "+strings.Join(where, ", "))
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Errorf("the store half names the engine's %s", b)
	}
}
