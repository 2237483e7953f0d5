package sim

import (
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// families names each family's files by prefix (docs/architecture.md): a planner, its
// baselines' switches and its own helpers. Every other file is the engine's (the request
// lifecycle, the scheduler, the event jumps, the snapshot) or holds helpers several
// families share, each in a file named for what it is (num.go, collective.go, …): those
// every family may use. A new family adds its prefix here.
var families = []struct{ name, prefix string }{
	{"NeuPIMs", "neupims"}, {"NeuPIMs", "npu_"}, {"NeuPIMs", "pim.go"}, {"NeuPIMs", "channel.go"},
	{"GPU", "gpu.go"},
	{"L3", "l3"},
	{"LoL-PIM", "lolpim"},
	{"HeLioS", "helios"},
	{"Hermes", "hermes"},
}

// family is the family a file of sim/ belongs to, "" for an engine file.
func family(file string) string {
	for _, f := range families {
		if strings.HasPrefix(file, f.prefix) {
			return f.name
		}
	}
	return ""
}

// A family's files use the engine's and their own unexported names, never another
// family's; the engine's files use no family's. A helper two families need moves to an
// engine file named for what it is, so that a family can be read, changed or removed
// alone. Exported names (the config types, the system names) are the package's
// interface and may be named anywhere.
func TestFamiliesUseOnlyTheEngineAndTheirOwn(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var parsed []*ast.File
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, f)
	}
	if len(parsed) < 40 {
		t.Fatalf("%d files; the test is looking in the wrong place", len(parsed))
	}
	for _, f := range families {
		if !slices.ContainsFunc(parsed, func(p *ast.File) bool {
			return strings.HasPrefix(filepath.Base(fset.Position(p.Package).Filename), f.prefix)
		}) {
			t.Errorf("no file of %s starts with %q; families names files sim/ no longer has", f.name, f.prefix)
		}
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil)}
	pkg, err := conf.Check("sim", fset, parsed, info)
	if err != nil {
		t.Fatal(err)
	}
	var bad []string
	seen := map[string]bool{}
	for id, obj := range info.Uses {
		if obj.Pkg() != pkg || obj.Exported() {
			continue
		}
		// Package-level names, methods and struct fields; not a function's locals.
		if v, ok := obj.(*types.Var); ok && !v.IsField() && obj.Parent() != pkg.Scope() {
			continue
		}
		def := filepath.Base(fset.Position(obj.Pos()).Filename)
		use := filepath.Base(fset.Position(id.Pos()).Filename)
		owner, user := family(def), family(use)
		if owner == "" || owner == user {
			continue
		}
		if user == "" {
			user = "engine"
		}
		if msg := fmt.Sprintf("%s (%s) uses %s from %s (%s)", use, user, obj.Name(), def, owner); !seen[msg] {
			seen[msg] = true
			bad = append(bad, fmt.Sprintf("%s: %s; move it to num.go, collective.go or another engine file named for what it is", fset.Position(id.Pos()), msg))
		}
	}
	slices.Sort(bad)
	for _, b := range bad {
		t.Error(b)
	}
}
