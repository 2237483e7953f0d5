package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pimtui/pimtui/presets"
	"github.com/pimtui/pimtui/ui"
)

// side is one system of a comparison as the command line names it: a preset, optionally
// with settings switched, NAME+key=value+key=value.
type side struct {
	spec string   // as given, trimmed
	name string   // the preset
	sets []string // its own "key=value" settings, in order
}

// sideExample shows the form of a side in messages.
const sideExample = "e.g. neupims or neupims+pim.dual_row_buffer=false"

// maxSides is the most sides a comparison takes: one letter each.
const maxSides = 26

// letter names side i as the compare screens do: A, B, C…
func letter(i int) string { return string(rune('A' + i)) }

// parseSide splits "NAME+key=value+…" into the preset name and its settings. A part
// without "=" belongs to the part before it, so a value such as 1e+06 keeps its "+".
func parseSide(spec string) (side, error) {
	s := side{spec: strings.TrimSpace(spec)}
	if s.spec == "" {
		return s, usagef("an empty side; name a preset, %s", sideExample)
	}
	parts := strings.Split(s.spec, "+")
	s.name = strings.TrimSpace(parts[0])
	switch {
	case s.name == "":
		return s, usagef("side %q has no preset before its settings; want NAME+key=value, %s", s.spec, sideExample)
	case strings.Contains(s.name, "="):
		return s, usagef("side %q starts with a setting; want NAME+key=value, e.g. neupims+%s", s.spec, s.name)
	}
	for _, p := range parts[1:] {
		switch {
		case strings.Contains(p, "="):
			s.sets = append(s.sets, p)
		case len(s.sets) > 0:
			s.sets[len(s.sets)-1] += "+" + p
		default:
			return s, usagef("side %q: %q is not a setting; want NAME+key=value, e.g. %s+pim.dual_row_buffer=false", s.spec, p, s.name)
		}
	}
	return s, nil
}

// streamKey reports a key of the request stream, which every side takes from side A:
// every workload key but the batch and the KV policy, which belong to the system.
func streamKey(key string) bool {
	rest, ok := strings.CutPrefix(strings.TrimSpace(key), "workload.")
	return ok && rest != "batch" && rest != "kv_policy"
}

// resolveSides builds each side's engine configuration: its preset (from get), the
// command line's overrides as for run, then its own settings. Every side then serves
// side A's request stream (dataset, requests, arrival, rate, lengths, request trace,
// seed, prefill, steps and warm-up); each keeps its own hardware, model, batch and KV
// policy.
func (o *options) resolveSides(cmd *cobra.Command, specs []string, get func(string) (*presets.File, error)) ([]ui.Side, error) {
	if len(specs) > maxSides {
		return nil, usagef("%d sides; a comparison takes at most %d", len(specs), maxSides)
	}
	base, err := o.overrides(cmd)
	if err != nil {
		return nil, err
	}
	trace, err := o.trace(cmd)
	if err != nil {
		return nil, err
	}
	files := make([]*presets.File, len(specs))
	sides := make([]side, len(specs))
	for i, spec := range specs {
		s, err := parseSide(spec)
		if err != nil {
			return nil, err
		}
		bad := func(err error) error { return usagef("side %s %q: %v", letter(i), s.spec, err) }
		f, err := get(s.name)
		if err != nil {
			return nil, bad(err)
		}
		for _, kv := range base {
			if err := f.Set(kv); err != nil {
				return nil, usageError{fmt.Errorf("--set %w", err)}
			}
		}
		for _, kv := range s.sets {
			if err := f.Set(kv); err != nil {
				return nil, bad(err)
			}
			if key, _, _ := strings.Cut(kv, "="); i > 0 && streamKey(key) {
				return nil, usagef("side %s %q: %s is part of the request stream, which every side takes from side A; set it on side A or with a flag for every side",
					letter(i), s.spec, strings.TrimSpace(key))
			}
		}
		files[i], sides[i] = f, s
	}
	out := make([]ui.Side, len(specs))
	for i, f := range files {
		if i > 0 {
			w := files[0].Workload
			w.Batch, w.KVPolicy = f.Workload.Batch, f.Workload.KVPolicy
			f.Workload = w
		}
		cfg, err := presets.Build(f, trace)
		if err != nil {
			return nil, usagef("side %s %q: %v", letter(i), sides[i].spec, err)
		}
		out[i] = ui.Side{Name: sides[i].spec, Config: cfg}
	}
	return out, nil
}

// compareChoices lists what the explorer's compare chooser offers beside a preset: the
// preset (with the command line's overrides) with each of its switches turned over, then
// every other preset.
func (o *options) compareChoices(cmd *cobra.Command) func(string) []ui.CompareChoice {
	return func(name string) []ui.CompareChoice {
		var out []ui.CompareChoice
		if f, err := o.sideFile(name); err == nil {
			sets, _ := o.overrides(cmd)
			for _, kv := range sets {
				f.Set(kv)
			}
			for _, sw := range f.Switches() {
				kv := sw.Key + "=" + strconv.FormatBool(!sw.On)
				out = append(out, ui.CompareChoice{Side: name + "+" + kv, Label: name + " with " + kv, Description: sw.Doc})
			}
		}
		for _, p := range presetList() {
			if p.Name != name {
				out = append(out, ui.CompareChoice{Side: p.Name, Label: p.Name, Description: p.Description})
			}
		}
		return out
	}
}

// compareLoader builds the two sides of a comparison the explorer opens.
func (o *options) compareLoader(cmd *cobra.Command) func(a, b string) (ui.Side, ui.Side, error) {
	return func(a, b string) (ui.Side, ui.Side, error) {
		s, err := o.resolveSides(cmd, []string{a, b}, o.sideFile)
		if err != nil {
			return ui.Side{}, ui.Side{}, err
		}
		return s[0], s[1], nil
	}
}

// sideFile loads a side's preset for the explorer: the --config file when the explorer
// runs it under its name, an embedded preset otherwise.
func (o *options) sideFile(name string) (*presets.File, error) {
	if o.config != "" {
		if data, err := presets.ReadFile(o.config); err == nil {
			if f, err := presets.Parse(o.config, data); err == nil && f.Name == name {
				return f, nil
			}
		}
	}
	return presets.Get(name)
}
