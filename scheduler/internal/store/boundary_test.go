package store

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The store is a unit of its own: it imports nothing of the engine
// (package scheduler or its other internal packages). The compiler keeps
// it from importing scheduler itself (a cycle); this keeps the engine's
// helpers from leaking in beside it.
func TestStoreImportsNothingOfTheEngine(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		af, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range af.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if strings.HasPrefix(p, "github.com/solocron/solocron/scheduler") {
				t.Errorf("%s imports %s", f, p)
			}
		}
	}
}
