package ui

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The explorer draws what the engine returns and nothing else: of the program's own
// packages it imports only sim, its own rooms (ui/…) and the plumbing under internal/
// that every layer shares (outfile), never presets or the commands, so a view can be
// built and tested from a sim.Config alone.
func TestImportsOnlySim(t *testing.T) {
	const mod = "github.com/pimtui/pimtui/"
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("%d files (%v)", len(files), err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") { // tests may build their configs from presets
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			own, ok := strings.CutPrefix(p, mod)
			if ok && own != "sim" && own != "internal/outfile" && !strings.HasPrefix(own, "ui/") {
				t.Errorf("%s imports %s; ui takes only sim and internal/outfile of the program's packages", name, p)
			}
		}
	}
}
