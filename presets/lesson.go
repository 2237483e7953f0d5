package presets

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/pimtui/pimtui/assets"
	"github.com/pimtui/pimtui/sim"
)

// Lesson is a guided tour of one mechanism for a class: a sequence of steps, each a
// preset with a few settings, run for a few iterations, with a short explanation, the
// pane to look at, what to notice there, and claims about the numbers the simulation
// computes (which tests check, so a lesson never tells students something the model
// does not show).
type Lesson struct {
	Name    string       `toml:"name"`
	Title   string       `toml:"title"`
	Family  string       `toml:"family"`
	Order   int          `toml:"order"`
	Summary string       `toml:"summary"`
	Steps   []LessonStep `toml:"step"`
}

// LessonStep is one screen of a lesson.
type LessonStep struct {
	Title  string   `toml:"title"`
	Preset string   `toml:"preset"`
	Set    []string `toml:"set"`
	// Steps is how many iterations the explorer runs before the student looks;
	// MeasureSteps, when set, is how many the claims measure instead.
	Steps        int     `toml:"steps"`
	MeasureSteps int     `toml:"measure_steps"`
	Focus        string  `toml:"focus"`
	Text         string  `toml:"text"`
	Notice       string  `toml:"notice"`
	Claims       []Claim `toml:"claim"`
}

// Claim is a statement about one metric of a step's run: metric op value, or metric op
// factor × the same metric in step ThanStep of the lesson.
type Claim struct {
	Text     string   `toml:"text"`
	Metric   string   `toml:"metric"`
	Op       string   `toml:"op"`
	ThanStep *int     `toml:"than_step"`
	Factor   *float64 `toml:"factor"`
	Value    *float64 `toml:"value"`
}

// LessonPanes are the explorer's panes a step can focus, in the explorer's order.
var LessonPanes = []string{"banks", "timeline", "kv", "neurons", "metrics", "requests"}

// lessonFamilies orders the lesson list: the basics (GPU-only) first, then the papers.
var lessonFamilies = []string{"gpu", "neupims", "l3", "lolpim", "helios", "hermes"}

// claimOps are the comparisons a claim may make.
var claimOps = []string{"<", ">", "<=", ">="}

// Limits on a step's iterations: the explorer runs Steps on every entry to the step, so
// they stay few; the claims may measure longer runs.
const (
	maxLessonSteps  = 50
	maxMeasureSteps = 5000
)

// lessonKeys are the valid keys at each level of a lesson file, for suggestions.
var lessonKeys = map[string][]string{
	"":           {"name", "title", "family", "order", "summary", "step"},
	"step":       {"title", "preset", "set", "steps", "measure_steps", "focus", "text", "notice", "claim"},
	"step.claim": {"text", "metric", "op", "than_step", "factor", "value"},
}

// lessonTypes says what each key holds, for wrong-type messages.
var lessonTypes = map[string]string{
	"name": "a string", "title": "a string", "family": "a string", "order": "an integer", "summary": "a string",
	"step": "[[step]] tables", "step.title": "a string", "step.preset": "a string", "step.set": `an array of "key=value" strings`,
	"step.steps": "an integer", "step.measure_steps": "an integer", "step.focus": "a string", "step.text": "a string",
	"step.notice": "a string", "step.claim": "[[step.claim]] tables", "step.claim.text": "a string", "step.claim.metric": "a string",
	"step.claim.op": `a string ("<", ">", "<=" or ">=")`, "step.claim.than_step": "an integer", "step.claim.factor": "a number",
	"step.claim.value": "a number",
}

var lessonNameRE = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// ParseLesson decodes a lesson file strictly and checks it: unknown keys, wrong types,
// missing text, unknown presets, settings, panes and metrics are errors with
// file:line:col and, for names, the closest valid ones. Every step's preset and settings
// must build an engine configuration.
func ParseLesson(filename string, data []byte) (*Lesson, error) {
	var l Lesson
	d := toml.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(&l); err != nil {
		return nil, lessonDecodeError(filename, err)
	}
	at := lessonPositions(data)
	errAt := func(key, msg string) error {
		p, ok := at[key]
		for k := key; !ok && strings.Contains(k, "."); {
			k = k[:strings.LastIndex(k, ".")]
			p, ok = at[k]
		}
		if !ok {
			p = pos{1, 1}
		}
		return &Error{File: filename, Line: p.line, Col: p.col, Key: key, Msg: msg}
	}
	need := func(key, v, what string) error {
		if strings.TrimSpace(v) == "" {
			return errAt(key, "missing "+what)
		}
		return nil
	}
	for _, c := range []struct{ key, v, what string }{
		{"name", l.Name, "the lesson's name"}, {"title", l.Title, "a title"},
		{"family", l.Family, "the family (" + strings.Join(lessonFamilies, ", ") + ")"}, {"summary", l.Summary, "a one-paragraph summary"},
	} {
		if err := need(c.key, c.v, c.what); err != nil {
			return nil, err
		}
	}
	if !lessonNameRE.MatchString(l.Name) {
		return nil, errAt("name", fmt.Sprintf("%q: want lowercase words joined by hyphens, e.g. dual-row-buffers", l.Name))
	}
	if !slices.Contains(lessonFamilies, l.Family) {
		return nil, errAt("family", fmt.Sprintf("unknown family %q; %s", l.Family, DidYouMean(l.Family, lessonFamilies)))
	}
	if len(l.Steps) == 0 {
		return nil, errAt("name", "a lesson needs at least one [[step]]")
	}
	known := sim.MetricNames(nil)
	for i := range l.Steps {
		s := &l.Steps[i]
		k := fmt.Sprintf("step.%d.", i+1)
		for _, c := range []struct{ key, v, what string }{
			{"title", s.Title, "the step's title"}, {"preset", s.Preset, "the preset the step runs"},
			{"focus", s.Focus, "the pane to focus (" + strings.Join(LessonPanes, ", ") + ")"},
			{"text", s.Text, "the step's explanation"}, {"notice", s.Notice, "what to notice on screen"},
		} {
			if err := need(k+c.key, c.v, c.what); err != nil {
				return nil, err
			}
		}
		if !slices.Contains(LessonPanes, s.Focus) {
			return nil, errAt(k+"focus", fmt.Sprintf("unknown pane %q; %s", s.Focus, DidYouMean(s.Focus, LessonPanes)))
		}
		if s.Steps < 1 || s.Steps > maxLessonSteps {
			return nil, errAt(k+"steps", fmt.Sprintf("%d is out of range; want 1 to %d iterations before the student looks", s.Steps, maxLessonSteps))
		}
		if s.MeasureSteps != 0 && (s.MeasureSteps < 1 || s.MeasureSteps > maxMeasureSteps) {
			return nil, errAt(k+"measure_steps", fmt.Sprintf("%d is out of range; want 1 to %d", s.MeasureSteps, maxMeasureSteps))
		}
		f, err := Get(s.Preset)
		if err != nil {
			var pe *Error
			if errors.As(err, &pe) {
				return nil, errAt(k+"preset", pe.Msg)
			}
			return nil, errAt(k+"preset", err.Error())
		}
		for j, kv := range s.Set {
			if err := f.Set(kv); err != nil {
				return nil, errAt(fmt.Sprintf("%sset.%d", k, j+1), err.Error())
			}
		}
		cfg, err := Build(f, nil)
		if err != nil {
			return nil, errAt(k+"set", err.Error())
		}
		if lim := cfg.Workload.Steps; lim > 0 && lim < max(s.Steps, s.MeasureSteps) {
			return nil, errAt(k+"steps", fmt.Sprintf("the run stops after %d iterations (workload.steps), before the %d this step needs", lim, max(s.Steps, s.MeasureSteps)))
		}
		for j := range s.Claims {
			if err := checkClaim(&s.Claims[j], i, len(l.Steps), known, func(key, msg string) error {
				return errAt(strings.TrimSuffix(fmt.Sprintf("%sclaim.%d.%s", k, j+1, key), "."), msg)
			}); err != nil {
				return nil, err
			}
		}
	}
	return &l, nil
}

// checkClaim checks one claim of step i (0-based) of a lesson of n steps.
func checkClaim(c *Claim, i, n int, known []string, errAt func(key, msg string) error) error {
	if strings.TrimSpace(c.Text) == "" {
		return errAt("text", "missing the claim in words")
	}
	if err := checkMetricName(c.Metric, known); err != nil {
		return errAt("metric", err.Error())
	}
	if !slices.Contains(claimOps, c.Op) {
		return errAt("op", fmt.Sprintf("%q is not a comparison; want one of %s", c.Op, strings.Join(quoteAll(claimOps), ", ")))
	}
	switch {
	case (c.ThanStep == nil) == (c.Value == nil):
		return errAt("", "give exactly one of than_step (the same metric in another step) or value")
	case c.Value != nil && c.Factor != nil:
		return errAt("factor", "factor scales another step's metric; it goes with than_step, not value")
	case c.Value != nil && (math.IsNaN(*c.Value) || math.IsInf(*c.Value, 0)):
		return errAt("value", "want a finite number")
	case c.ThanStep != nil && (*c.ThanStep < 1 || *c.ThanStep > n || *c.ThanStep == i+1):
		return errAt("than_step", fmt.Sprintf("%d is not another step of this lesson; want 1 to %d, not %d", *c.ThanStep, n, i+1))
	case c.Factor != nil && !(*c.Factor > 0 && !math.IsInf(*c.Factor, 0)):
		return errAt("factor", "want a finite number above 0")
	}
	return nil
}

// checkMetricName accepts a numeric field of the run's result; the lane groups of
// utilization and bubble_fraction depend on the system and are checked when a step runs.
func checkMetricName(m string, known []string) error {
	if slices.Contains(known, m) || sim.IsCauseMetric(m) {
		return nil
	}
	for _, p := range []string{"utilization.", "bubble_fraction."} {
		if rest, ok := strings.CutPrefix(m, p); ok && rest != "" && !strings.Contains(rest, ".") {
			return nil
		}
	}
	all := append(slices.Clone(known), "utilization.LANE", "bubble_fraction.LANE", "bubble_by_cause.LANE.CAUSE")
	return fmt.Errorf("unknown metric %q; %s", m, DidYouMean(m, all))
}

// lessonPositions maps each key of a lesson file to where it starts: "name", "step.2"
// (the second [[step]] header), "step.2.preset", "step.2.set.3" (the third setting),
// "step.2.claim.1.metric".
func lessonPositions(data []byte) map[string]pos {
	out := map[string]pos{}
	p := unstable.Parser{}
	p.Reset(data)
	prefix, steps, claims := "", 0, 0
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			k, where := dottedKey(&p, e.Key())
			switch k {
			case "step":
				steps++
				claims = 0
				prefix = fmt.Sprintf("step.%d", steps)
			case "step.claim":
				claims++
				prefix = fmt.Sprintf("step.%d.claim.%d", steps, claims)
			default:
				prefix = k
			}
			if _, seen := out[prefix]; !seen {
				out[prefix] = where
			}
			prefix += "."
		case unstable.KeyValue:
			k, where := dottedKey(&p, e.Key())
			out[prefix+k] = where
			if v := e.Value(); v != nil && v.Kind == unstable.Array {
				it := v.Children()
				for j := 1; it.Next(); j++ {
					out[fmt.Sprintf("%s%s.%d", prefix, k, j)] = posOf(&p, it.Node().Raw)
				}
			}
		}
	}
	return out
}

// lessonDecodeError turns a go-toml error into an Error with file:line:col, suggesting
// the closest key of the same level for an unknown one.
func lessonDecodeError(filename string, err error) error {
	var se *toml.StrictMissingError
	if errors.As(err, &se) && len(se.Errors) > 0 {
		de := se.Errors[0]
		line, col := de.Position()
		parts := de.Key()
		level := strings.Join(parts[:max(0, len(parts)-1)], ".")
		key := strings.Join(parts, ".")
		msg := "unknown key"
		if valid, ok := lessonKeys[level]; ok && len(parts) > 0 {
			msg += "; " + DidYouMean(parts[len(parts)-1], valid)
		}
		return &Error{File: filename, Line: line, Col: col, Key: key, Msg: msg}
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		line, col := de.Position()
		msg := strings.TrimPrefix(de.Error(), "toml: ")
		key := strings.Join(de.Key(), ".")
		if strings.Contains(msg, "cannot decode") || strings.Contains(msg, "cannot store") {
			if t, ok := lessonTypes[key]; ok {
				msg = "wrong type: want " + t
			}
		}
		return &Error{File: filename, Line: line, Col: col, Key: key, Msg: msg}
	}
	return &Error{File: filename, Msg: err.Error()}
}

var lessonsOnce = sync.OnceValues(loadLessons)

// loadLessons parses every embedded lesson; a file's name must be its lesson's name.
func loadLessons() ([]*Lesson, error) {
	ents, err := fs.Glob(assets.Lessons, "lessons/*.toml")
	if err != nil {
		return nil, err
	}
	var out []*Lesson
	for _, e := range ents {
		b, err := assets.Lessons.ReadFile(e)
		if err != nil {
			return nil, err
		}
		l, err := ParseLesson(e, b)
		if err != nil {
			return nil, err
		}
		if want := strings.TrimSuffix(path.Base(e), ".toml"); l.Name != want {
			return nil, &Error{File: e, Line: 1, Col: 1, Key: "name", Msg: fmt.Sprintf("%q differs from the file's name %q", l.Name, want)}
		}
		out = append(out, l)
	}
	sort.SliceStable(out, func(i, j int) bool {
		fi, fj := slices.Index(lessonFamilies, out[i].Family), slices.Index(lessonFamilies, out[j].Family)
		if fi != fj {
			return fi < fj
		}
		if out[i].Order != out[j].Order {
			return out[i].Order < out[j].Order
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// Lessons returns the embedded lessons: the basics first, then each family's in the
// presets' order of families.
func Lessons() ([]*Lesson, error) { return lessonsOnce() }

// LessonNames lists the embedded lessons' names in the order of Lessons.
func LessonNames() []string {
	ls, _ := Lessons()
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.Name
	}
	return out
}

// GetLesson returns the embedded lesson called name.
func GetLesson(name string) (*Lesson, error) {
	ls, err := Lessons()
	if err != nil {
		return nil, err
	}
	for _, l := range ls {
		if l.Name == name {
			return l, nil
		}
	}
	return nil, &Error{Key: "lesson", Msg: fmt.Sprintf("unknown lesson %q; %s", name, DidYouMean(name, LessonNames()))}
}

// StepFile is step i's preset (0-based) with the step's settings and then overrides
// applied, as the command line's overrides apply on top of a preset.
func (l *Lesson) StepFile(i int, overrides ...string) (*File, error) {
	if i < 0 || i >= len(l.Steps) {
		return nil, fmt.Errorf("lesson %s has %d steps, not %d", l.Name, len(l.Steps), i+1)
	}
	s := l.Steps[i]
	f, err := Get(s.Preset)
	if err != nil {
		return nil, err
	}
	for _, kv := range s.Set {
		if err := f.Set(kv); err != nil {
			return nil, fmt.Errorf("lesson %s step %d: %w", l.Name, i+1, err)
		}
	}
	for _, kv := range overrides {
		if err := f.Set(kv); err != nil {
			return nil, fmt.Errorf("--set %w", err)
		}
	}
	return f, nil
}

// StepConfig builds the engine configuration of step i (0-based): its preset, its
// settings, then overrides.
func (l *Lesson) StepConfig(i int, overrides ...string) (sim.Config, error) {
	f, err := l.StepFile(i, overrides...)
	if err != nil {
		return sim.Config{}, err
	}
	return Build(f, nil)
}

// AgainstText describes the right-hand side of a claim in words: "0.5", "step 1",
// "1.5 × step 1".
func (c Claim) AgainstText() string {
	if c.Value != nil {
		return strconv.FormatFloat(*c.Value, 'g', -1, 64)
	}
	s := fmt.Sprintf("step %d", *c.ThanStep)
	if c.Factor != nil && *c.Factor != 1 {
		s = strconv.FormatFloat(*c.Factor, 'g', -1, 64) + " × " + s
	}
	return s
}
