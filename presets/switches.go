package presets

import (
	"reflect"
	"slices"
	"strings"
)

// Switch is one boolean key of a preset: a mechanism (or a modelling choice) that can be
// turned on or off, with its value in the preset.
type Switch struct {
	Key, Doc string
	On       bool
}

// Switches lists the boolean keys of the sections f's system uses, in file order, with
// their values in f. Turning one over is the smallest ablation of a preset, the one a
// comparison of the preset with itself shows.
func (f *File) Switches() []Switch {
	secs := sectionsFor(f.System)
	var out []Switch
	for _, fd := range fields() {
		sec, _, _ := strings.Cut(fd.Path, ".")
		if fd.Kind != reflect.Bool || !slices.Contains(secs, sec) {
			continue
		}
		if v, _, ok := lookup(f, fd.Path); ok {
			out = append(out, Switch{Key: fd.Path, Doc: fd.Doc, On: v.Bool()})
		}
	}
	return out
}
