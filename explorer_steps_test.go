package main

import (
	"testing"

	"github.com/spf13/cobra"

	"github.com/pimtui/pimtui/sim"
)

// The explorer runs a preset's workload to its end: hermes' 12-step budget, which keeps
// a headless run short, is lifted; a budget the command line asks for stays.
func TestExplorerLiftsThePresetsStepBudget(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"--preset", "hermes"}, 0},
		{[]string{"--preset", "l3"}, 0},
		{[]string{"--preset", "hermes", "--steps", "40"}, 40},
		{[]string{"--preset", "hermes", "--set", "workload.steps=30"}, 30},
	} {
		var o options
		var got sim.Config
		c := &cobra.Command{Use: "pimtui", RunE: func(cmd *cobra.Command, _ []string) error {
			_, cfg, err := o.resolve(cmd)
			if err != nil {
				return err
			}
			if cfg.Workload.Steps == 0 && tc.want == 0 {
				t.Errorf("%v: the preset declares no budget to lift", tc.args)
			}
			got = o.explorerSteps(cmd, cfg)
			return nil
		}}
		o.register(c)
		c.SetArgs(tc.args)
		if err := c.Execute(); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if got.Workload.Steps != tc.want {
			t.Errorf("%v: the explorer's budget is %d steps, want %d", tc.args, got.Workload.Steps, tc.want)
		}
	}
}

// A lesson's steps run their presets to the end as well (hot-cold-neurons is on hermes).
func TestLessonStepsLiftTheBudget(t *testing.T) {
	for _, tc := range []struct {
		sets []string
		want int
	}{{nil, 0}, {[]string{"workload.steps=5"}, 5}} {
		cfg, err := lessonStep(tc.sets)("hot-cold-neurons", 1)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Workload.Steps != tc.want {
			t.Errorf("%v: a budget of %d steps, want %d", tc.sets, cfg.Workload.Steps, tc.want)
		}
	}
}
