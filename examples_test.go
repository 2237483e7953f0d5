package main

import (
	"encoding/json"
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pimtui/pimtui/assets"
	"github.com/pimtui/pimtui/presets"
)

// expectLine is a direction an example promises against its base preset:
// "# expect: FIELD OP PRESET", FIELD a dotted field of the JSON result.
var expectLine = regexp.MustCompile(`^# expect: ([a-z_.]+) (<=|>=|<|>) ([a-z0-9-]+)$`)

// jsonField reads a dotted field of a decoded JSON result.
func jsonField(t *testing.T, v map[string]any, path string) float64 {
	t.Helper()
	var cur any = v
	for _, k := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			t.Fatalf("%s: %q is not an object", path, k)
		}
		cur = m[k]
	}
	f, ok := cur.(float64)
	if !ok {
		t.Fatalf("%s is %v, not a number", path, cur)
	}
	return f
}

func runJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	out, errs, code := cli(t, append([]string{"run", "--format", "json"}, args...)...)
	if code != 0 {
		t.Fatalf("run %v: exit %d: %s", args, code, errs)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// Every example validates, is a new system rather than an embedded preset, runs to
// completion, and moves in each direction it promises against its base preset.
func TestExamples(t *testing.T) {
	names, err := fs.Glob(assets.Examples, "examples/*.toml")
	if err != nil || len(names) < 2 {
		t.Fatalf("%d examples (%v), want at least two", len(names), err)
	}
	bases := map[string]map[string]any{}
	for _, n := range names {
		t.Run(filepath.Base(n), func(t *testing.T) {
			src, err := assets.Examples.ReadFile(n)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("assets", n)
			out, errs, code := cli(t, "validate", path)
			if code != 0 || !strings.Contains(out, ": ok") {
				t.Fatalf("validate: exit %d: %s%s", code, out, errs)
			}
			f, err := presets.Parse(path, src)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := presets.Get(f.Name); err == nil {
				t.Fatalf("the example is named %q, like an embedded preset", f.Name)
			}
			var expects [][]string
			for _, l := range strings.Split(string(src), "\n") {
				if m := expectLine.FindStringSubmatch(l); m != nil {
					expects = append(expects, m[1:])
				} else if strings.HasPrefix(l, "# expect:") {
					t.Fatalf("malformed expectation %q: want \"# expect: FIELD OP PRESET\"", l)
				}
			}
			if len(expects) == 0 {
				t.Fatal("the example states no direction of change against its base preset")
			}
			got := runJSON(t, "--config", path)
			if jsonField(t, got, "requests_completed") != jsonField(t, got, "requests") {
				t.Fatalf("the run did not complete every request: %v of %v", got["requests_completed"], got["requests"])
			}
			for _, e := range expects {
				field, op, base := e[0], e[1], e[2]
				if bases[base] == nil {
					bases[base] = runJSON(t, "--preset", base)
				}
				a, b := jsonField(t, got, field), jsonField(t, bases[base], field)
				ok := map[string]bool{"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]
				if !ok {
					t.Errorf("%s: %g here, %g in %s; the file promises %s", field, a, b, base, op)
				}
			}
		})
	}
}
