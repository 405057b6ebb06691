package grpcgc_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// TestEveryExportedFuncHasAnExample fails for an exported function of the
// package with no Example (ExampleF, or ExampleF_suffix).
func TestEveryExportedFuncHasAnExample(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var exported []string
	examples := map[string]bool{}
	for _, de := range entries {
		name := de.Name()
		if !strings.HasSuffix(name, ".go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			switch {
			case !ok || fd.Recv != nil:
			case strings.HasSuffix(name, "_test.go"):
				if ex, ok := strings.CutPrefix(fd.Name.Name, "Example"); ok {
					ex, _, _ = strings.Cut(ex, "_")
					examples[ex] = true
				}
			case fd.Name.IsExported():
				exported = append(exported, fd.Name.Name)
			}
		}
	}
	if len(exported) < 12 {
		t.Fatalf("found %d exported functions, want the package's (at least 12)", len(exported))
	}
	for _, name := range exported {
		if !examples[name] {
			t.Errorf("%s has no Example", name)
		}
	}
}
