// The flags every simulating command shares, and how they resolve into an engine's
// configuration.

package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pimtui/pimtui/presets"
	"github.com/pimtui/pimtui/sim"
)

// options are the flags shared by the explorer and `run`: which system, and overrides.
type options struct {
	preset, config      string
	model, dataset      string
	batch, requests     int
	steps               int
	seed                int64
	inputLen, outputLen int
	arrival, prefill    string
	requestTrace        string
	sets                []string
	noMouse             bool
}

func (o *options) register(c *cobra.Command) {
	f := c.Flags()
	f.StringVar(&o.preset, "preset", "neupims", "embedded preset to run (pimtui presets lists them)")
	f.StringVar(&o.config, "config", "", "preset file to run instead of an embedded preset")
	f.StringVar(&o.model, "model", "", "model from the catalogue (e.g. gpt3-13b)")
	f.StringVar(&o.dataset, "dataset", "", "request-length dataset (e.g. alpaca)")
	f.IntVar(&o.batch, "batch", 0, "most requests decoding at once")
	f.IntVar(&o.requests, "requests", 0, "requests to serve")
	f.IntVar(&o.steps, "steps", 0, "stop after this many iterations")
	f.Int64Var(&o.seed, "seed", 0, "random seed of the workload")
	f.IntVar(&o.inputLen, "input-len", 0, "fixed input length in tokens")
	f.IntVar(&o.outputLen, "output-len", 0, "fixed output length in tokens")
	f.StringVar(&o.arrival, "arrival", "", "closed (batch kept full) or poisson:RATE (requests/s)")
	f.StringVar(&o.prefill, "prefill", "", "run (prompts run before decode) or skip (input already in the KV cache)")
	f.StringVar(&o.requestTrace, "request-trace", "", "CSV of requests (arrival_s,input_len,output_len) instead of the dataset")
	f.StringArrayVar(&o.sets, "set", nil, "override one preset key, e.g. --set pim.dual_row_buffer=false (repeatable)")
}

// resolve loads the preset or file, applies the overrides and builds the engine config.
func (o *options) resolve(c *cobra.Command) (*presets.File, sim.Config, error) {
	var f *presets.File
	var err error
	if o.config != "" {
		if c.Flags().Changed("preset") {
			return nil, sim.Config{}, usagef("--preset and --config are exclusive; pick one")
		}
		data, rerr := readPresetFile(o.config)
		if rerr != nil {
			return nil, sim.Config{}, rerr
		}
		f, err = presets.Parse(o.config, data)
	} else {
		f, err = presets.Get(o.preset)
	}
	if err != nil {
		return nil, sim.Config{}, usageError{err}
	}
	flagged, err := o.flagOverrides(c)
	if err != nil {
		return nil, sim.Config{}, err
	}
	// A value the file rejects is reported against the flag the user typed.
	for _, fs := range flagged {
		if err := f.Set(fs.set); err != nil {
			var pe *presets.Error
			if errors.As(err, &pe) {
				err = errors.New(pe.Msg)
			}
			return nil, sim.Config{}, usagef("--%s %s: %v", fs.flag, fs.value, err)
		}
	}
	for _, s := range o.sets {
		if err := f.Set(s); err != nil {
			return nil, sim.Config{}, usageError{fmt.Errorf("--set %w", err)}
		}
	}
	trace, err := o.trace(c)
	if err != nil {
		return nil, sim.Config{}, err
	}
	cfg, err := presets.Build(f, trace)
	if err != nil {
		return nil, sim.Config{}, usageError{err}
	}
	return f, cfg, nil
}

// readPresetFile reads a preset file given on the command line; any problem is a usage
// error.
func readPresetFile(path string) ([]byte, error) {
	data, err := presets.ReadFile(path)
	var pe *presets.Error
	switch {
	case errors.As(err, &pe):
		return nil, usageError{err}
	case err != nil:
		return nil, usagef("cannot read preset file: %v", err)
	}
	return data, nil
}

// trace reads the --request-trace file; nil without one. A trace whose arrival times
// start later than the simulated clock holds (Unix timestamps) starts at its first
// request, and c's stderr says so.
func (o *options) trace(c *cobra.Command) ([]sim.TraceRequest, error) {
	if o.requestTrace == "" {
		return nil, nil
	}
	fh, err := os.Open(o.requestTrace)
	if err != nil {
		return nil, usagef("cannot read request trace: %v", err)
	}
	defer fh.Close()
	trace, shift, err := sim.ReadTrace(fh)
	if err != nil {
		return nil, usagef("%s:%v", o.requestTrace, err)
	}
	if shift > 0 {
		fmt.Fprintf(c.ErrOrStderr(), "pimtui: %s: the arrival times start at %.15g s, later than the simulated clock holds (Unix time?); every arrival is taken relative to the first request's\n", o.requestTrace, shift)
	}
	return trace, nil
}

// overrideKeys maps each override flag to the preset key it sets (--arrival sets two:
// see flagSets).
var overrideKeys = []struct{ flag, key string }{
	{"model", "model.name"}, {"dataset", "workload.dataset"}, {"batch", "workload.batch"},
	{"requests", "workload.requests"}, {"steps", "workload.steps"}, {"seed", "workload.seed"},
	{"input-len", "workload.input_len"}, {"output-len", "workload.output_len"},
	{"prefill", "workload.prefill"}, {"arrival", "workload.arrival"},
}

// flagSets turns an override flag and its value into the "key=value" overrides it
// stands for; ok is false when flag is not an override flag.
func flagSets(flag, v string) (sets []string, ok bool, err error) {
	if flag == "arrival" {
		kind, rate, hasRate := strings.Cut(v, ":")
		switch {
		case kind == "closed" && !hasRate:
			return []string{"workload.arrival=closed"}, true, nil
		case kind == "poisson" && hasRate:
			return []string{"workload.arrival=poisson", "workload.rate_per_s=" + rate}, true, nil
		}
		return nil, true, usagef("--arrival %q: want closed or poisson:RATE (requests/s), e.g. --arrival poisson:20", v)
	}
	for _, o := range overrideKeys {
		if o.flag == flag {
			return []string{o.key + "=" + v}, true, nil
		}
	}
	return nil, false, nil
}

// flagSet is one "key=value" override an override flag stands for, with the flag and
// the value the user typed.
type flagSet struct{ flag, value, set string }

// flagOverrides lists the overrides of the override flags given, in overrideKeys' order.
func (o *options) flagOverrides(c *cobra.Command) ([]flagSet, error) {
	fl := c.Flags()
	var out []flagSet
	for _, k := range overrideKeys {
		if !fl.Changed(k.flag) {
			continue
		}
		v := fl.Lookup(k.flag).Value.String()
		s, _, err := flagSets(k.flag, v)
		if err != nil {
			return nil, err
		}
		for _, x := range s {
			out = append(out, flagSet{k.flag, v, x})
		}
	}
	return out, nil
}

// overrides lists the "key=value" overrides the command line asks for: the override
// flags given, then each --set in order.
func (o *options) overrides(c *cobra.Command) ([]string, error) {
	flagged, err := o.flagOverrides(c)
	if err != nil {
		return nil, err
	}
	sets := make([]string, 0, len(flagged)+len(o.sets))
	for _, fs := range flagged {
		sets = append(sets, fs.set)
	}
	return append(sets, o.sets...), nil
}

// newEngine builds an engine, reporting an impossible configuration as bad input.
func newEngine(cfg sim.Config) (*sim.Engine, error) {
	e, err := sim.New(cfg)
	if err != nil {
		return nil, usagef("%s: %v", cfg.Preset, err)
	}
	return e, nil
}
