package presets

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/pimtui/pimtui/internal/outfile"
	"github.com/pimtui/pimtui/sim"
)

//go:embed *.toml catalog/*.toml
var files embed.FS

// MaxFileBytes is the largest preset file pimtui reads: the shipped presets are at most
// 15 KB. The TOML decoder's time grows with the square of the unknown keys in a file
// (4,000 take a second), so a file is refused on its size, before it is decoded.
const MaxFileBytes = 64 << 10

func tooLarge(filename string, size int64) error {
	return &Error{File: filename, Msg: fmt.Sprintf("%d bytes: a preset file may be at most %d KiB (the shipped presets are at most 15 KB); is it the right file?", size, MaxFileBytes>>10)}
}

// ReadFile reads the preset file at path. A file larger than MaxFileBytes, or one that
// is not a regular file (a FIFO would never end), is refused before it is read.
func ReadFile(path string) ([]byte, error) {
	// Stat before opening: opening a FIFO waits for a writer.
	st, err := os.Stat(path)
	switch {
	case err != nil:
		return nil, err
	case !st.Mode().IsRegular():
		return nil, &Error{File: path, Msg: fmt.Sprintf("not a regular file (%s); give a preset file", outfile.Kind(st.Mode()))}
	case st.Size() > MaxFileBytes:
		return nil, tooLarge(path, st.Size())
	}
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, MaxFileBytes+1))
	if err == nil && len(data) > MaxFileBytes {
		err = tooLarge(path, int64(len(data)))
	}
	return data, err
}

// families orders the preset listing; within a family the preset named after it comes
// first, then the rest alphabetically.
var families = []string{"neupims", "l3", "lolpim", "helios", "hermes", "gpu"}

var (
	namesOnce sync.Once
	names     []string
)

// Names lists the embedded presets, grouped by family.
func Names() []string {
	namesOnce.Do(func() {
		ents, _ := fs.Glob(files, "*.toml")
		rank := map[string]string{}
		for _, e := range ents {
			n := strings.TrimSuffix(e, ".toml")
			family := familyOf(n)
			fi := slices.Index(families, family)
			if fi < 0 {
				fi = len(families)
			}
			first := "1"
			if n == family {
				first = "0"
			}
			rank[n] = fmt.Sprintf("%02d%s%s", fi, first, n)
			names = append(names, n)
		}
		sort.Slice(names, func(i, j int) bool { return rank[names[i]] < rank[names[j]] })
	})
	return slices.Clone(names)
}

// familyOf reads an embedded preset's family, from the presets it extends when it does
// not say; it only orders the listing, so a broken chain gives "".
func familyOf(name string) string {
	for range 16 {
		var head struct {
			Family  string `toml:"family"`
			Extends string `toml:"extends"`
		}
		b, _ := files.ReadFile(name + ".toml")
		toml.Unmarshal(b, &head)
		if head.Family != "" || head.Extends == "" {
			return head.Family
		}
		name = head.Extends
	}
	return ""
}

// Source returns the text of an embedded preset.
func Source(name string) ([]byte, error) {
	b, err := files.ReadFile(name + ".toml")
	if err != nil {
		return nil, &Error{Key: "preset", Msg: fmt.Sprintf("unknown preset %q; %s", name, DidYouMean(name, Names()))}
	}
	return b, nil
}

// Get parses an embedded preset.
func Get(name string) (*File, error) {
	p, _, err := getParsed(name)
	return p.file, err
}

// getParsed parses an embedded preset and returns its text too.
func getParsed(name string) (parsed, []byte, error) {
	src, err := Source(name)
	if err != nil {
		return parsed{}, nil, err
	}
	p, err := parse(name+".toml", src, []string{name})
	return p, src, err
}

// pos is a line and column in a file.
type pos struct{ line, col int }

// keyPositions maps each dotted key of a TOML document to where its key starts, and each
// table header to where the header starts.
func keyPositions(data []byte) map[string]pos {
	out := map[string]pos{}
	p := unstable.Parser{}
	p.Reset(data)
	prefix := ""
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			k, at := dottedKey(&p, e.Key())
			prefix = k + "."
			if _, seen := out[k]; !seen {
				out[k] = at
			}
		case unstable.KeyValue:
			k, at := dottedKey(&p, e.Key())
			out[prefix+k] = at
		}
	}
	return out
}

// posOf is where the node at r starts in the document p parses.
func posOf(p *unstable.Parser, r unstable.Range) pos {
	sh := p.Shape(r)
	return pos{sh.Start.Line, sh.Start.Column}
}

// dottedKey joins the parts of a key with dots and says where its first part starts.
func dottedKey(p *unstable.Parser, it unstable.Iterator) (string, pos) {
	var parts []string
	var first pos
	for it.Next() {
		n := it.Node()
		if len(parts) == 0 {
			first = posOf(p, n.Raw)
		}
		parts = append(parts, string(n.Data))
	}
	return strings.Join(parts, "."), first
}

// Parse decodes a preset file strictly, resolves the preset it extends, and checks every
// value's range, the sections its system needs and the keys they require. Errors carry
// file:line:col, in the file that sets the value.
func Parse(filename string, data []byte) (*File, error) {
	p, err := parse(filename, data, nil)
	if err != nil {
		return nil, err
	}
	return p.file, nil
}

// parse is Parse for a file reached through chain, the files that extend it.
func parse(filename string, data []byte, chain []string) (parsed, error) {
	if len(data) > MaxFileBytes {
		return parsed{}, tooLarge(filename, int64(len(data)))
	}
	f, err := decodeStrict(filename, data)
	if err != nil {
		return parsed{}, err
	}
	at := ownPositions(filename, data)
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		return parsed{}, decodeError(filename, err)
	}
	if f.Extends != "" {
		p, err := parent(filename, f.Extends, at["extends"], chain)
		if err != nil {
			return parsed{}, err
		}
		system := f.System
		if system == "" {
			system = p.file.System
		}
		doc, at = inherit(p, doc, at, system)
		merged, err := toml.Marshal(doc)
		if err != nil {
			return parsed{}, err
		}
		if f, err = decodeStrict(filename, merged); err != nil {
			return parsed{}, err
		}
	}
	errAt := func(key, msg string) error {
		o, ok := at[key]
		for !ok && strings.Contains(key, ".") {
			up := key[:strings.LastIndex(key, ".")]
			if o, ok = at[up]; !ok {
				key = up
			}
		}
		if !ok {
			o = origin{filename, pos{1, 1}}
		}
		return &Error{File: o.file, Line: o.line, Col: o.col, Key: key, Msg: msg}
	}
	if err := check(f, at, errAt); err != nil {
		return parsed{}, err
	}
	return parsed{file: f, doc: doc, at: at}, nil
}

// decodeStrict decodes a preset file, refusing unknown keys and wrong types.
func decodeStrict(filename string, data []byte) (*File, error) {
	var f File
	d := toml.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(&f); err != nil {
		return nil, decodeError(filename, err)
	}
	return &f, nil
}

// parents are the presets a file may extend: the embedded ones (a test gives others).
var parents fs.FS = files

// parent resolves the embedded preset name that the file filename extends (at where).
// chain names the embedded presets on the way, to refuse a cycle.
func parent(filename, name string, where origin, chain []string) (parsed, error) {
	errHere := func(msg string) error {
		return &Error{File: filename, Line: where.line, Col: where.col, Key: "extends", Msg: msg}
	}
	src, err := fs.ReadFile(parents, name+".toml")
	if err != nil {
		return parsed{}, errHere(fmt.Sprintf("unknown preset %q to extend; %s", name, DidYouMean(name, Names())))
	}
	if slices.Contains(chain, name) {
		return parsed{}, errHere(fmt.Sprintf("presets extend one another in a cycle (%s); let one of them set its keys itself", strings.Join(append(chain, name), " extends ")))
	}
	return parse(name+".toml", src, append(chain, name))
}

// check validates a decoded preset: ranges, required keys, expectations, catalogue names
// and splits. at says where each key is set; errAt builds an error there.
func check(f *File, at map[string]origin, errAt func(key, msg string) error) error {
	for _, fd := range fields() {
		if _, present := at[fd.Path]; !present {
			continue
		}
		v, _, ok := lookup(f, fd.Path)
		if !ok {
			continue
		}
		if msg := checkValue(fd, v); msg != "" {
			return errAt(fd.Path, msg)
		}
	}
	need := map[string][]string{
		"":         {"name", "description", "family", "system"},
		"model":    {"name", "tp", "pp", "precision_bytes"},
		"workload": {"dataset", "requests", "batch", "arrival", "prefill", "kv_policy", "seed"},
	}
	if !slices.Contains(sim.Systems(), f.System) {
		return errAt("system", fmt.Sprintf("unknown system %q; %s", f.System, DidYouMean(f.System, sim.Systems())))
	}
	for _, sec := range sectionsFor(f.System) {
		need[sec] = sectionKeys(sec)
	}
	secs := make([]string, 0, len(need))
	for s := range need {
		secs = append(secs, s)
	}
	sort.Strings(secs)
	for _, sec := range secs {
		for _, k := range need[sec] {
			full := k
			if sec != "" {
				full = sec + "." + k
			}
			if _, ok := at[full]; !ok {
				fd := fieldByPath(full)
				return errAt(full, fmt.Sprintf("missing required key %q (%s)", full, fd.Doc))
			}
		}
	}
	for i, e := range f.Expect {
		g := e.Grid
		if (e.Versus == "" && (e.Value <= 0 || len(e.BestOf) > 0)) || (e.Versus != "" && e.Ratio <= 0) || len(g.Model) == 0 || (len(g.Dataset) == 0 && len(g.ModelDataset) == 0) || len(g.Batch) == 0 {
			return errAt("expect", fmt.Sprintf("expectation %d (%q) needs versus, ratio > 0 and a grid of model, dataset and batch", i+1, e.ID))
		}
		perModel := func(n int) bool { return n > 0 && n != len(g.Model) }
		if perModel(len(g.TP)) || perModel(len(g.PP)) || perModel(len(g.ModelMaxBatch)) || perModel(len(g.ModelDataset)) {
			return errAt("expect", fmt.Sprintf("expectation %d (%q): grid tp, pp, model_max_batch and model_dataset need one entry per model", i+1, e.ID))
		}
		if e.Mean != "" && e.Mean != "arithmetic" && e.Mean != "geometric" && e.Mean != "max" {
			return errAt("expect", fmt.Sprintf("expectation %d (%q): mean %q is not arithmetic, geometric or max", i+1, e.ID, e.Mean))
		}
		if e.Metric != "throughput_tok_s" && e.Metric != "mean_batch" && !strings.HasPrefix(e.Metric, "utilization.") {
			return errAt("expect", fmt.Sprintf("expectation %d (%q): metric %q is not throughput_tok_s, mean_batch or utilization.GROUP", i+1, e.ID, e.Metric))
		}
		switch {
		case e.Method != "steady" && e.Method != "whole":
			return errAt("expect", fmt.Sprintf("expectation %d (%q): method %q is not steady or whole; say how the paper measured", i+1, e.ID, e.Method))
		case e.Method == "steady" && (e.Steps < 1 || e.Requests != 0):
			return errAt("expect", fmt.Sprintf("expectation %d (%q): a steady-state measurement needs steps ≥ 1 (and a warm-up) and no requests: the closed loop is kept full", i+1, e.ID))
		case e.Method == "whole" && (e.Steps != 0 || e.Warmup != 0):
			return errAt("expect", fmt.Sprintf("expectation %d (%q): a whole run measures every iteration; drop steps and warmup", i+1, e.ID))
		}
	}
	for _, k := range f.Shared {
		if !slices.ContainsFunc(allPaths(), func(p string) bool { return p == k || strings.HasPrefix(p, k+".") }) && k != "model.split" {
			return errAt("shared", fmt.Sprintf("unknown key or table %q; %s", k, DidYouMean(k, allPaths())))
		}
	}
	if err := checkNames(f); err != nil {
		var pe *Error
		if errors.As(err, &pe) {
			return errAt(pe.Key, pe.Msg)
		}
		return err
	}
	if msg := checkSplits(f.Model); msg != "" {
		return errAt("model.split", msg)
	}
	return nil
}

// checkSplits checks the paper's split per model: known models, each once, degrees in
// range, and the preset's own model at the split the table gives it.
func checkSplits(m ModelSec) string {
	c, _ := catalog()
	seen := map[string]bool{}
	for _, s := range m.Split {
		_, known := c.models[s.Model]
		switch {
		case !known:
			return fmt.Sprintf("unknown model %q; %s", s.Model, DidYouMean(s.Model, c.modelNames))
		case seen[s.Model]:
			return fmt.Sprintf("model %q is listed twice", s.Model)
		case s.TP < 1 || s.TP > 64 || s.PP < 1 || s.PP > 64:
			return fmt.Sprintf("%s: tp %d, pp %d out of range; want 1 to 64", s.Model, s.TP, s.PP)
		}
		seen[s.Model] = true
	}
	if s, ok := m.SplitOf(m.Name); ok && (s.TP != m.TP || s.PP != m.PP) {
		return fmt.Sprintf("the split gives %s tp %d, pp %d but model.tp and model.pp are %d and %d", m.Name, s.TP, s.PP, m.TP, m.PP)
	}
	return ""
}

// sectionKeys lists every leaf key under a section, sub-tables included.
func sectionKeys(sec string) []string {
	var out []string
	for _, fd := range fields() {
		if rest, ok := strings.CutPrefix(fd.Path, sec+"."); ok {
			out = append(out, rest)
		}
	}
	return out
}

// sectionsFor lists the sections a system needs, from the File's systems tags.
func sectionsFor(system string) []string {
	var out []string
	t := reflect.TypeOf(File{})
	for i := range t.NumField() {
		sf := t.Field(i)
		if slices.Contains(strings.Split(sf.Tag.Get("systems"), ","), system) {
			out = append(out, strings.Split(sf.Tag.Get("toml"), ",")[0])
		}
	}
	return out
}

func fieldByPath(p string) field {
	for _, f := range fields() {
		if f.Path == p {
			return f
		}
	}
	return field{Path: p}
}

// decodeError turns a go-toml error into an Error with file:line:col.
func decodeError(filename string, err error) error {
	var se *toml.StrictMissingError
	if errors.As(err, &se) && len(se.Errors) > 0 {
		de := se.Errors[0]
		line, col := de.Position()
		key := strings.Join(de.Key(), ".")
		return &Error{File: filename, Line: line, Col: col, Key: key, Msg: "unknown key; " + DidYouMean(key, allPaths())}
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		line, col := de.Position()
		msg := strings.TrimPrefix(de.Error(), "toml: ")
		key := strings.Join(de.Key(), ".")
		if strings.Contains(msg, "cannot decode") {
			fd := fieldByPath(key)
			msg = fmt.Sprintf("wrong type: want %s (%s)", fd.Type(), fd.Range())
		}
		return &Error{File: filename, Line: line, Col: col, Key: key, Msg: msg}
	}
	return &Error{File: filename, Msg: err.Error()}
}

func allPaths() []string {
	var out []string
	for _, f := range fields() {
		out = append(out, f.Path)
	}
	return out
}

// checkNames checks that catalogue names in f exist.
func checkNames(f *File) error {
	c, err := catalog()
	if err != nil {
		return err
	}
	if _, ok := c.models[f.Model.Name]; !ok {
		return &Error{Key: "model.name", Msg: fmt.Sprintf("unknown model %q; %s", f.Model.Name, DidYouMean(f.Model.Name, c.modelNames))}
	}
	if _, ok := c.datasets[f.Workload.Dataset]; !ok {
		return &Error{Key: "workload.dataset", Msg: fmt.Sprintf("unknown dataset %q; %s", f.Workload.Dataset, DidYouMean(f.Workload.Dataset, c.datasetNames))}
	}
	if f.GPU != nil {
		if _, ok := c.gpus[f.GPU.Name]; !ok {
			return &Error{Key: "gpu.name", Msg: fmt.Sprintf("unknown GPU %q; %s", f.GPU.Name, DidYouMean(f.GPU.Name, c.gpuNames))}
		}
	}
	return nil
}

// Marshal renders f as TOML (used by `presets show` for files changed by overrides).
func Marshal(f *File) ([]byte, error) { return toml.Marshal(f) }
