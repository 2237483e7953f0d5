package experiment

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/pimtui/pimtui/presets"
	"github.com/pimtui/pimtui/sim"
)

// Level is one value of a swept axis: its label as the user wrote it and the overrides
// ("key=value") that set it.
type Level struct {
	Label string
	Sets  []string
}

// Axis is one varied parameter of a sweep and its values.
type Axis struct {
	Name   string
	Levels []Level
}

// SweepSpec is a sweep: every preset run at every combination of the axes' levels,
// with Base applied to every run first.
type SweepSpec struct {
	Presets []string
	Base    []string
	Axes    []Axis
	// Load returns the preset file a run starts from (default: presets.Get).
	Load func(name string) (*presets.File, error)
	// Workers runs the points on this many goroutines (0: GOMAXPROCS).
	Workers int
	// Progress, when set, is called after each finished point with the count done and
	// the total; it may be called from several goroutines, never concurrently.
	Progress func(done, total int)
}

// SweepRow is one point of a sweep: the preset, one level label per axis, and the run's
// result, or why it could not run (a configuration the system cannot hold).
type SweepRow struct {
	Preset string
	Labels []string
	Result sim.Result
	Err    error
}

// sweepPoint is one prepared run.
type sweepPoint struct {
	row SweepRow
	cfg sim.Config
}

// Points lists the sweep's points in their order: preset by preset, then the cross
// product of the axes with the last axis varying fastest.
func (s SweepSpec) Points() [][]int {
	idx := [][]int{{}}
	for _, a := range s.Axes {
		var next [][]int
		for _, p := range idx {
			for j := range a.Levels {
				next = append(next, append(append([]int(nil), p...), j))
			}
		}
		idx = next
	}
	return idx
}

// Config builds the engine configuration of one point: the preset with the base
// overrides, then each axis's level. An unknown key or a bad value is an *Error.
func (s SweepSpec) Config(preset string, levels []int) (sim.Config, error) {
	load := s.Load
	if load == nil {
		load = presets.Get
	}
	f, err := load(preset)
	if err != nil {
		return sim.Config{}, err
	}
	sets := append([]string(nil), s.Base...)
	for i, j := range levels {
		sets = append(sets, s.Axes[i].Levels[j].Sets...)
	}
	for _, kv := range sets {
		if err := f.Set(kv); err != nil {
			return sim.Config{}, err
		}
	}
	cfg, err := presets.Build(f, nil)
	if err != nil {
		return sim.Config{}, fmt.Errorf("%s: %w", preset, err)
	}
	cfg.Recycle = true
	return cfg, nil
}

// Sweep runs every point of s, spread over the workers, and returns the rows in the
// order of Points for each preset in turn. Every run is independent and seeded by its
// configuration, so the rows do not depend on the number of workers. A bad key or value
// fails the whole sweep before anything runs; a point whose system cannot hold the
// configuration (sim.New fails) comes back with Err set.
func Sweep(s SweepSpec) ([]SweepRow, error) {
	var pts []sweepPoint
	for _, p := range s.Presets {
		for _, lv := range s.Points() {
			cfg, err := s.Config(p, lv)
			if err != nil {
				return nil, err
			}
			labels := make([]string, len(lv))
			for i, j := range lv {
				labels[i] = s.Axes[i].Levels[j].Label
			}
			pts = append(pts, sweepPoint{row: SweepRow{Preset: p, Labels: labels}, cfg: cfg})
		}
	}
	defer relaxGC()()
	workers := s.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = max(1, min(workers, len(pts)))
	var (
		wg   sync.WaitGroup
		next atomic.Int64
		mu   sync.Mutex
		done int
	)
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(pts) {
					return
				}
				pts[i].row.Result, pts[i].row.Err = runToEnd(pts[i].cfg)
				if s.Progress != nil {
					mu.Lock()
					done++
					s.Progress(done, len(pts))
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	rows := make([]SweepRow, len(pts))
	for i, p := range pts {
		rows[i] = p.row
	}
	return rows, nil
}

// Each run allocates its engine's tables (some 18 MB), uses them for a moment and drops
// them. At the default collector target, runs on several cores spend more time collecting
// and handing pages back to the system than the extra cores gain; a sweep therefore
// lets the heap grow to several times its live size while it runs.
var (
	gcMu     sync.Mutex
	gcUsers  int
	gcBefore int
)

// relaxGC raises the collector's target for the duration of a sweep and returns the
// function that restores it once the last concurrent sweep ends.
func relaxGC() func() {
	gcMu.Lock()
	defer gcMu.Unlock()
	if gcUsers == 0 {
		gcBefore = debug.SetGCPercent(-1)
		debug.SetGCPercent(max(gcBefore, 800))
		if gcBefore < 0 {
			debug.SetGCPercent(gcBefore) // the collector was off: leave it so
		}
	}
	gcUsers++
	return func() {
		gcMu.Lock()
		defer gcMu.Unlock()
		if gcUsers--; gcUsers == 0 {
			debug.SetGCPercent(gcBefore)
		}
	}
}

// runToEnd runs one configuration to the end of its workload. Only its result is read, so
// the engine may jump from event to event.
func runToEnd(cfg sim.Config) (sim.Result, error) {
	cfg.HistoryCap, cfg.Jump = 0, true
	e, err := sim.New(cfg)
	if err != nil {
		return sim.Result{}, err
	}
	for {
		if _, err := e.Step(); err != nil {
			if errors.Is(err, sim.ErrDone) {
				return e.Result(), nil
			}
			return sim.Result{}, err
		}
	}
}
