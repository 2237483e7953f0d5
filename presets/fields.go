package presets

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
)

// field is one settable leaf key of a preset file.
type field struct {
	Path string
	Doc  string
	Min  string
	Max  string
	Enum []string
	Kind reflect.Kind
}

// Range describes the values a field allows, for messages and `presets show`.
func (f field) Range() string {
	switch {
	case len(f.Enum) > 0:
		return "one of " + strings.Join(f.Enum, ", ")
	case f.Kind == reflect.Bool:
		return "true or false"
	case f.Min != "" && f.Max != "":
		return f.Min + " to " + f.Max
	case f.Kind == reflect.String:
		return "a name"
	}
	return "any"
}

// Type names the field's type.
func (f field) Type() string {
	switch f.Kind {
	case reflect.Bool:
		return "bool"
	case reflect.String:
		return "string"
	case reflect.Float64:
		return "number"
	default:
		return "integer"
	}
}

// fields lists every settable key of a preset file (sections included even when the
// system does not use them), in file order.
func fields() []field {
	var out []field
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		for i := range t.NumField() {
			sf := t.Field(i)
			if !sf.IsExported() {
				continue // bookkeeping (File.tpSet), not a key
			}
			name := strings.Split(sf.Tag.Get("toml"), ",")[0]
			if path := prefix + name; path == "extends" {
				continue // resolved when the file is read; no override can change it
			}
			ft := sf.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			path := prefix + name
			switch ft.Kind() {
			case reflect.Struct:
				walk(ft, path+".")
				continue
			case reflect.Slice:
				continue
			}
			f := field{Path: path, Doc: sf.Tag.Get("doc"), Min: sf.Tag.Get("min"), Max: sf.Tag.Get("max"), Kind: ft.Kind()}
			if e := sf.Tag.Get("enum"); e != "" {
				f.Enum = strings.Split(e, ",")
			}
			out = append(out, f)
		}
	}
	walk(reflect.TypeOf(File{}), "")
	return out
}

// Keys returns every settable key with its type, range and meaning.
func Keys() []KeyInfo {
	fs := fields()
	out := make([]KeyInfo, len(fs))
	for i, f := range fs {
		out[i] = KeyInfo{Key: f.Path, Type: f.Type(), Range: f.Range(), Doc: f.Doc}
	}
	return out
}

// KeyInfo documents one settable key.
type KeyInfo struct {
	Key, Type, Range, Doc string
}

// lookup finds the reflect.Value of a dotted key in f, allocating optional sections.
func lookup(f *File, path string) (reflect.Value, reflect.StructField, bool) {
	v := reflect.ValueOf(f).Elem()
	parts := strings.Split(path, ".")
	var sf reflect.StructField
	for i, p := range parts {
		if v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct {
			return reflect.Value{}, sf, false
		}
		found := false
		for j := range v.NumField() {
			cand := v.Type().Field(j)
			if strings.Split(cand.Tag.Get("toml"), ",")[0] == p {
				sf, v, found = cand, v.Field(j), true
				break
			}
		}
		if !found {
			return reflect.Value{}, sf, false
		}
		if i == len(parts)-1 {
			if v.Kind() == reflect.Struct || v.Kind() == reflect.Slice || v.Kind() == reflect.Pointer {
				return reflect.Value{}, sf, false
			}
			return v, sf, true
		}
	}
	return reflect.Value{}, sf, false
}

// checkValue checks v against its field's range or enum and returns a message if it is
// out of range.
func checkValue(f field, v reflect.Value) string {
	switch v.Kind() {
	case reflect.String:
		if len(f.Enum) > 0 {
			for _, e := range f.Enum {
				if v.String() == e {
					return ""
				}
			}
			return fmt.Sprintf("%q is not allowed; want %s", v.String(), f.Range())
		}
	case reflect.Int, reflect.Int64:
		x := v.Int()
		if f.Min != "" {
			lo, _ := strconv.ParseInt(f.Min, 10, 64)
			hi, _ := strconv.ParseInt(f.Max, 10, 64)
			if x < lo || x > hi {
				return fmt.Sprintf("%d is out of range; want %s", x, f.Range())
			}
		}
	case reflect.Float64:
		x := v.Float()
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Sprintf("%v is not a finite number; want %s", x, f.Range())
		}
		if f.Min != "" {
			lo, _ := strconv.ParseFloat(f.Min, 64)
			hi, _ := strconv.ParseFloat(f.Max, 64)
			if x < lo || x > hi {
				return fmt.Sprintf("%g is out of range; want %s", x, f.Range())
			}
		}
	}
	return ""
}

// Set applies one override "key=value" to f, checking the key exists and the value has
// the right type and range.
func (f *File) Set(kv string) error {
	key, val, ok := strings.Cut(kv, "=")
	key, val = strings.TrimSpace(key), strings.TrimSpace(val)
	if !ok || key == "" {
		return &Error{Key: kv, Msg: "want key=value, e.g. --set pim.channels=16"}
	}
	var fd field
	paths := []string{}
	for _, x := range fields() {
		paths = append(paths, x.Path)
		if x.Path == key {
			fd = x
		}
	}
	if fd.Path == "" {
		return &Error{Key: key, Msg: "unknown key; " + DidYouMean(key, paths) + " (pimtui presets show NAME lists every key)"}
	}
	v, _, _ := lookup(f, key)
	bad := func() error {
		return &Error{Key: key, Msg: fmt.Sprintf("%q is not a valid %s; want %s", val, fd.Type(), fd.Range())}
	}
	switch v.Kind() {
	case reflect.Bool:
		b, err := strconv.ParseBool(val)
		if err != nil {
			return bad()
		}
		v.SetBool(b)
	case reflect.String:
		v.SetString(strings.Trim(val, `"`))
	case reflect.Int, reflect.Int64:
		x, err := strconv.ParseInt(strings.ReplaceAll(val, "_", ""), 10, 64)
		if err != nil {
			return bad()
		}
		v.SetInt(x)
	case reflect.Float64:
		x, err := strconv.ParseFloat(val, 64)
		if err != nil {
			return bad()
		}
		v.SetFloat(x)
	}
	if msg := checkValue(fd, v); msg != "" {
		return &Error{Key: key, Msg: msg}
	}
	switch key {
	case "model.tp":
		f.tpSet = true
	case "model.pp":
		f.ppSet = true
	case "model.name":
		// Another model runs at the split its paper gives it, unless set explicitly.
		if sp, ok := f.Model.SplitOf(f.Model.Name); ok {
			if !f.tpSet {
				f.Model.TP = sp.TP
			}
			if !f.ppSet {
				f.Model.PP = sp.PP
			}
		}
	}
	return nil
}
