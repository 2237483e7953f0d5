package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// Each command's file is its own: a helper two commands share lives in output.go,
// compare.go, options.go or explorer.go, never in another command's file, so a command
// can be read, changed or removed alone.
func TestCommandFilesStandAlone(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	owner := map[string]string{} // top-level name → the command file declaring it
	parsed := map[string]*ast.File{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || !strings.HasPrefix(name, "cmd_") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		parsed[name] = f
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					owner[d.Name.Name] = name
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						owner[s.Name.Name] = name
					case *ast.ValueSpec:
						for _, n := range s.Names {
							owner[n.Name] = name
						}
					}
				}
			}
		}
	}
	if len(parsed) < 5 {
		t.Fatalf("%d command files; the test is looking in the wrong place", len(parsed))
	}
	for name, f := range parsed {
		var visit func(n ast.Node) bool
		visit = func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr: // x.Name: Name is x's, not a top-level name
				ast.Inspect(n.X, visit)
				return false
			case *ast.KeyValueExpr: // a field name in a composite literal
				if _, ok := n.Key.(*ast.Ident); ok {
					ast.Inspect(n.Value, visit)
					return false
				}
			case *ast.Ident:
				if o := owner[n.Name]; n.Obj == nil && o != "" && o != name {
					t.Errorf("%s: %s uses %s, declared in %s; move it to a shared file", fset.Position(n.Pos()), name, n.Name, o)
				}
			}
			return true
		}
		ast.Inspect(f, visit)
	}
}
