package presets

import (
	"bufio"
	"bytes"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// A preset may extend another: `extends = "neupims"` takes every key of that embedded
// preset and the file sets only the keys that differ. Tables merge key by key; a value or
// an array replaces the parent's whole. What says what the preset itself is never passes
// on: its name, its description, its expectations and the family's list of shared keys.
// Nor do sections that the child's planner does not use (a GPU baseline of an NPU system
// takes the model and the workload, not the NPU).

// notInherited are the top-level keys a preset never takes from the one it extends.
var notInherited = []string{"name", "description", "expect", "extends", "shared"}

// origin is the file a key's value comes from and where in it.
type origin struct {
	file string
	pos
}

// parsed is a preset file with every key resolved: its decoded document and where each
// dotted key (and table) of it is set.
type parsed struct {
	file *File
	doc  map[string]any
	at   map[string]origin
}

// ownPositions is keyPositions with the file named.
func ownPositions(filename string, data []byte) map[string]origin {
	at := map[string]origin{}
	for k, p := range keyPositions(data) {
		at[k] = origin{filename, p}
	}
	return at
}

// inherit merges the child document over the parent's: it returns the resolved document
// and the origin of each of its keys. system is the child's resolved planner.
func inherit(parent parsed, child map[string]any, childAt map[string]origin, system string) (map[string]any, map[string]origin) {
	drop := func(top string) bool {
		if slices.Contains(notInherited, top) {
			return true
		}
		need, isSection := sectionSystems()[top]
		return isSection && !slices.Contains(need, system)
	}
	doc := map[string]any{}
	for k, v := range parent.doc {
		if !drop(k) {
			doc[k] = v
		}
	}
	doc = mergeTables(doc, child)
	at := map[string]origin{}
	for k, o := range parent.at {
		top, _, _ := strings.Cut(k, ".")
		if !drop(top) {
			at[k] = o
		}
	}
	maps.Copy(at, childAt)
	return doc, at
}

// mergeTables lays over on base: tables merge key by key, anything else replaces.
func mergeTables(base, over map[string]any) map[string]any {
	out := maps.Clone(base)
	for k, v := range over {
		sub, isTable := v.(map[string]any)
		had, hadTable := out[k].(map[string]any)
		if isTable && hadTable {
			out[k] = mergeTables(had, sub)
		} else {
			out[k] = v
		}
	}
	return out
}

// sectionSystems maps each section that belongs to some systems to those systems.
func sectionSystems() map[string][]string {
	out := map[string][]string{}
	t := reflect.TypeOf(File{})
	for i := range t.NumField() {
		sf := t.Field(i)
		if sys := sf.Tag.Get("systems"); sys != "" {
			out[strings.Split(sf.Tag.Get("toml"), ",")[0]] = strings.Split(sys, ",")
		}
	}
	return out
}

// Resolved renders an embedded preset with every key it takes from the presets it
// extends, each value marked with the file it comes from. A preset that extends none is
// its own text. The result is itself a preset file that parses to the same preset.
func Resolved(name string) ([]byte, error) {
	p, src, err := getParsed(name)
	if err != nil {
		return nil, err
	}
	if p.file.Extends == "" {
		return src, nil
	}
	doc := maps.Clone(p.doc)
	delete(doc, "extends")
	body, err := toml.Marshal(doc)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	chain := []string{name + ".toml"}
	for f := p.file.Extends; f != ""; {
		chain = append(chain, f+".toml")
		pf, err := Get(f)
		if err != nil {
			return nil, err
		}
		f = pf.Extends
	}
	fmt.Fprintf(&b, "# %s as pimtui resolves it: %s extends %s. Each value says which file sets it;\n", name, name+".toml", strings.Join(chain[1:], ", which extends "))
	fmt.Fprintf(&b, "# `pimtui presets show --source %s` prints the file as written, with its reasons.\n", name)
	// go-toml writes a map's keys in alphabetical order; put them back in the order of a
	// preset file (File's fields): name first, expectations last.
	rank := func(key string) int {
		top, _, _ := strings.Cut(key, ".")
		if i := slices.Index(topKeys(), top); i >= 0 {
			return i
		}
		return len(topKeys())
	}
	type chunk struct {
		rank  int
		lines []string
	}
	var chunks []chunk
	table := ""
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, MaxFileBytes)
	for sc.Scan() {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "[") {
			table = strings.Trim(trimmed, "[] ")
			chunks = append(chunks, chunk{rank: rank(table)})
		}
		key, _, isKV := strings.Cut(trimmed, " = ")
		if isKV && !strings.HasPrefix(trimmed, "[") {
			full := strings.Trim(key, `"'`)
			if table != "" {
				full = table + "." + full
			} else {
				chunks = append(chunks, chunk{rank: rank(full)})
			}
			if o, ok := originOf(p.at, full); ok {
				line += "  # " + o.file
			}
		}
		if len(chunks) > 0 && trimmed != "" {
			c := &chunks[len(chunks)-1]
			c.lines = append(c.lines, line)
		}
	}
	slices.SortStableFunc(chunks, func(a, b chunk) int { return a.rank - b.rank })
	for _, c := range chunks {
		if strings.HasPrefix(c.lines[0], "[") {
			b.WriteByte('\n')
		}
		for _, l := range c.lines {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	return b.Bytes(), nil
}

// topKeys are the top-level keys of a preset file in the order File declares them.
func topKeys() []string {
	var out []string
	t := reflect.TypeOf(File{})
	for i := range t.NumField() {
		if name := strings.Split(t.Field(i).Tag.Get("toml"), ",")[0]; name != "" {
			out = append(out, name)
		}
	}
	return out
}

// originOf is where key is set, or the nearest table around it that is.
func originOf(at map[string]origin, key string) (origin, bool) {
	for {
		if o, ok := at[key]; ok {
			return o, true
		}
		i := strings.LastIndex(key, ".")
		if i < 0 {
			return origin{}, false
		}
		key = key[:i]
	}
}
