package ui

import (
	"errors"
	"testing"
)

// A headless snapshot is the frame the explorer shows after the same steps.
func TestSnapshotIsTheExplorersFrame(t *testing.T) {
	d := newDriver(t, "neupims", 120, 40)
	d.keys("n", "n", "tab", "tab", "tab")
	cfg, err := smallConfig("neupims")
	if err != nil {
		t.Fatal(err)
	}
	got, err := Snapshot(cfg, Options{}, 3, 120, 40, "metrics")
	if err != nil {
		t.Fatal(err)
	}
	if want := screenText(d.m.render()); got != want {
		t.Fatalf("snapshot:\n%s\nexplorer:\n%s", got, want)
	}
}

func TestSnapshotErrors(t *testing.T) {
	cfg, err := smallConfig("gpu-h100")
	if err != nil {
		t.Fatal(err)
	}
	var se *SizeError
	if _, err := Snapshot(cfg, Options{}, 1, MinWidth-1, MinHeight, ""); !errors.As(err, &se) {
		t.Errorf("too narrow: %v", err)
	}
	var pe *PaneError
	if _, err := Snapshot(cfg, Options{}, 1, 80, 24, "heatmap"); !errors.As(err, &pe) {
		t.Errorf("unknown pane: %v", err)
	}
	var st *StepsError
	if _, err := Snapshot(cfg, Options{}, 100000, 80, 24, ""); !errors.As(err, &st) || st.Has < 1 || st.Has >= 100000 {
		t.Errorf("past the end: %v", err)
	}
}
