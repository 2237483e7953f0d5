package presets

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/pimtui/pimtui/sim"
)

// What two preset files differ in, for the difference explainer (sim/explain.go): every
// key whose value differs once extends and the overrides are resolved, with its meaning,
// and the configurations that lead from one to the other a key at a time.

// described are the keys that name and describe a preset rather than configure it.
var described = []string{"name", "description", "family", "paper"}

// Differences lists the keys whose values differ between a and b, in file order, each
// with its meaning. A section only one of them has (its planner reads it, the other's
// does not) is one entry, the section's name, set on one side and "–" on the other.
func Differences(a, b *File) []sim.Setting {
	var out []sim.Setting
	va, vb := reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem()
	for _, fd := range fields() {
		sec, _, nested := strings.Cut(fd.Path, ".")
		if !nested && slices.Contains(described, fd.Path) {
			continue
		}
		xa, oka := leaf(va, fd.Path)
		xb, okb := leaf(vb, fd.Path)
		switch {
		case !oka && !okb:
		case oka != okb:
			s := sim.Setting{Key: "[" + sec + "]", A: "–", B: "set", Meaning: "a section only B's planner (" + b.System + ") reads"}
			if oka {
				s.A, s.B, s.Meaning = "set", "–", "a section only A's planner ("+a.System+") reads"
			}
			if len(out) == 0 || out[len(out)-1].Key != s.Key {
				out = append(out, s)
			}
		case !xa.Equal(xb):
			out = append(out, sim.Setting{Key: fd.Path, A: valueText(xa), B: valueText(xb), Meaning: fd.Doc})
		}
	}
	return out
}

// leaf is the value of the dotted key in f (a struct value), false when a section on its
// path is absent. Unlike lookup it never allocates a section.
func leaf(v reflect.Value, path string) (reflect.Value, bool) {
	for _, p := range strings.Split(path, ".") {
		if v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return reflect.Value{}, false
			}
			v = v.Elem()
		}
		found := false
		for j := range v.NumField() {
			if strings.Split(v.Type().Field(j).Tag.Get("toml"), ",")[0] == p {
				v, found = v.Field(j), true
				break
			}
		}
		if !found {
			return reflect.Value{}, false
		}
	}
	return v, true
}

// valueText writes a key's value as a preset file or --set would.
func valueText(v reflect.Value) string {
	switch v.Kind() {
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	case reflect.Int, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	}
	return fmt.Sprint(v.Interface())
}

// clone copies f deeply enough that setting a key of the copy leaves f as it is: its
// sections are copied.
func (f *File) clone() *File {
	c := *f
	v := reflect.ValueOf(&c).Elem()
	for i := range v.NumField() {
		if fv := v.Field(i); fv.Kind() == reflect.Pointer && !fv.IsNil() && v.Type().Field(i).IsExported() {
			n := reflect.New(fv.Type().Elem())
			n.Elem().Set(fv.Elem())
			fv.Set(n)
		}
	}
	return &c
}

// Contrast is what the difference explainer needs of sides a and b, resolved preset
// files serving the same requests: the keys that differ and, when both run one planner,
// how to build a's configuration with any of those keys at b's values (the switch
// attribution). trace is the request trace both serve, if any.
func Contrast(a, b *File, trace []sim.TraceRequest) *sim.Contrast {
	c := &sim.Contrast{Settings: Differences(a, b)}
	if a.System != b.System {
		c.Note = fmt.Sprintf("the sides run different planners (%s, %s): no path of switches leads from one to the other", a.System, b.System)
		return c
	}
	vb := reflect.ValueOf(b).Elem()
	c.Toggle = func(on []bool) (sim.Config, error) {
		f := a.clone()
		vf := reflect.ValueOf(f).Elem()
		for i, s := range c.Settings {
			if !on[i] {
				continue
			}
			to, ok := leaf(vf, s.Key)
			from, _ := leaf(vb, s.Key)
			if !ok {
				return sim.Config{}, fmt.Errorf("%s: not a key both sides have", s.Key)
			}
			to.Set(from)
		}
		return Build(f, trace)
	}
	return c
}
