package experiment

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pimtui/pimtui/presets"
)

// checksOnce is every registered reference's checks, measured once for the tests that
// read them.
var checksOnce = sync.OnceValues(func() ([]Check, error) { return Validations() })

// checkProblems lists what is wrong with the checks reference returned: none at all, a
// check without a name of its own, a real preset, a source or a unit, a tolerance that is not
// positive, a figure that is not a finite number (or a reference figure of zero, against
// which no error is defined), a check outside its tolerance that does not say why, or one
// within that carries a gap all the same.
func checkProblems(reference string, cs []Check) []string {
	if len(cs) == 0 {
		return []string{reference + ": no checks"}
	}
	var out []string
	bad := func(c Check, f string, a ...any) {
		out = append(out, fmt.Sprintf("%s %q: ", reference, c.Name)+fmt.Sprintf(f, a...))
	}
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	names := map[string]bool{}
	for _, c := range cs {
		if names[c.Name] {
			bad(c, "a second check of that name")
		}
		names[c.Name] = true
		if c.Reference != reference {
			bad(c, "reference %q, registered as %q", c.Reference, reference)
		}
		if strings.TrimSpace(c.Name) == "" {
			bad(c, "no name")
		}
		if _, err := presets.Get(c.Preset); err != nil {
			bad(c, "%v", err)
		}
		if strings.TrimSpace(c.Source) == "" {
			bad(c, "no source")
		}
		if strings.TrimSpace(c.Unit) == "" {
			bad(c, "no unit")
		}
		if !(c.Tol > 0) || !finite(c.Tol) {
			bad(c, "tolerance %v, want a positive fraction", c.Tol)
			continue
		}
		if !finite(c.Ref) || c.Ref == 0 || !finite(c.Pimtui) {
			bad(c, "reference %v, pimtui %v: want finite figures and a reference other than 0", c.Ref, c.Pimtui)
			continue
		}
		gap := strings.TrimSpace(c.Gap) != ""
		switch {
		case !c.Within() && !gap:
			bad(c, "%+.1f%% is outside ±%g%% and has no gap saying why", 100*c.Error(), 100*c.Tol)
		case c.Within() && gap:
			bad(c, "%+.1f%% is within ±%g%% but carries a gap", 100*c.Error(), 100*c.Tol)
		}
	}
	return out
}

// Every registered reference returns checks that say what they are and, where pimtui is
// outside a check's tolerance, why; each reference is described for the headings.
func TestEveryReferenceIsChecked(t *testing.T) {
	all, err := checksOnce()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range References() {
		if _, ok := references[name]; !ok {
			t.Errorf("reference %q has no description in check.go's references", name)
		}
		var cs []Check
		for _, c := range all {
			if c.Reference == name {
				cs = append(cs, c)
			}
		}
		for _, p := range checkProblems(name, cs) {
			t.Error(p)
		}
	}
	for _, c := range all {
		if !slices.Contains(References(), c.Reference) {
			t.Errorf("check %q names reference %q, which is not registered", c.Name, c.Reference)
		}
	}
}

// The rules of TestEveryReferenceIsChecked catch each kind of bad check.
func TestCheckProblems(t *testing.T) {
	good := Check{Reference: "r", Name: "n", Preset: "neupims", Source: "s", Unit: "ms", Ref: 10, Pimtui: 10.5, Tol: 0.10}
	if p := checkProblems("r", []Check{good}); len(p) != 0 {
		t.Fatalf("a good check: %v", p)
	}
	off := good
	off.Pimtui, off.Gap = 14, "pimtui lacks the residual adds, 24 k cycles a layer"
	if p := checkProblems("r", []Check{off}); len(p) != 0 {
		t.Fatalf("a check outside with a gap: %v", p)
	}
	for _, c := range []struct {
		edit func(*Check)
		want string
	}{
		{func(c *Check) { c.Name = good.Name }, "a second check of that name"},
		{func(c *Check) { c.Reference = "other" }, `reference "other", registered as "r"`},
		{func(c *Check) { c.Name = " " }, "no name"},
		{func(c *Check) { c.Preset = "neupim" }, `unknown preset "neupim"`},
		{func(c *Check) { c.Source = "" }, "no source"},
		{func(c *Check) { c.Unit = "" }, "no unit"},
		{func(c *Check) { c.Tol = 0 }, "tolerance 0"},
		{func(c *Check) { c.Ref = math.NaN() }, "want finite figures"},
		{func(c *Check) { c.Ref = 0 }, "want finite figures"},
		{func(c *Check) { c.Pimtui = math.Inf(1) }, "want finite figures"},
		{func(c *Check) { c.Pimtui = 12 }, "+20.0% is outside ±10% and has no gap"},
		{func(c *Check) { c.Gap = "a reason nobody needs" }, "+5.0% is within ±10% but carries a gap"},
	} {
		bad := good
		bad.Name = "m"
		c.edit(&bad)
		p := checkProblems("r", []Check{good, bad})
		if len(p) != 1 || !strings.Contains(p[0], c.want) {
			t.Errorf("want one problem saying %q, got %v", c.want, p)
		}
	}
	if p := checkProblems("r", nil); len(p) != 1 || p[0] != "r: no checks" {
		t.Errorf("no checks: %v", p)
	}
}

// Measuring the references again gives the same checks, figure for figure.
func TestValidationsDeterministic(t *testing.T) {
	first, err := checksOnce()
	if err != nil {
		t.Fatal(err)
	}
	again, err := Validations()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(first, again) {
		t.Fatalf("two runs differ:\n%+v\n%+v", first, again)
	}
}

// provenanceProblems lists what is wrong with the reference data under root (one
// directory per reference): a directory no registered reference checks, one without a
// PROVENANCE.md, or a file its PROVENANCE.md does not name.
func provenanceProblems(root string, refs []string) []string {
	var out []string
	dirs, _ := filepath.Glob(filepath.Join(root, "*"))
	for _, dir := range dirs {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			continue
		}
		if name := filepath.Base(dir); !slices.Contains(refs, name) {
			out = append(out, fmt.Sprintf("%s: no reference %q is registered to check this data; the references are %v", dir, name, refs))
		}
		prov, err := os.ReadFile(filepath.Join(dir, "PROVENANCE.md"))
		if err != nil || strings.TrimSpace(string(prov)) == "" {
			out = append(out, dir+": no PROVENANCE.md saying where its figures come from and how to measure them again")
			continue
		}
		err = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() == "PROVENANCE.md" {
				return err
			}
			if !strings.Contains(string(prov), d.Name()) {
				out = append(out, fmt.Sprintf("%s: PROVENANCE.md does not name %s", dir, d.Name()))
			}
			return nil
		})
		if err != nil {
			out = append(out, err.Error())
		}
	}
	return out
}

// Each reference's data under testdata/validation/<reference>/ has a PROVENANCE.md that
// names every file beside it, and belongs to a registered reference.
func TestValidationProvenance(t *testing.T) {
	for _, p := range provenanceProblems(filepath.Join("testdata", "validation"), References()) {
		t.Error(p)
	}
}

// The rules of TestValidationProvenance catch data without provenance, a file it does
// not name, and data no reference checks.
func TestProvenanceProblems(t *testing.T) {
	root := t.TempDir()
	write := func(path, text string) {
		t.Helper()
		path = filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if p := provenanceProblems(root, []string{"sim"}); len(p) != 0 {
		t.Fatalf("no data yet: %v", p)
	}
	write("sim/stages.csv", "a,b\n")
	write("sim/PROVENANCE.md", "stages.csv: the authors' run at commit f299af3\n")
	write("sim/traces/clb-0.csv", "0,1\n")
	write("gpu/layer.csv", "1\n")
	got := strings.Join(provenanceProblems(root, []string{"sim"}), "\n")
	for _, want := range []string{"sim: PROVENANCE.md does not name clb-0.csv", `gpu: no reference "gpu" is registered`, "gpu: no PROVENANCE.md"} {
		if !strings.Contains(got, want) {
			t.Errorf("problems lack %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "stages.csv") {
		t.Errorf("a named file reported:\n%s", got)
	}
}
