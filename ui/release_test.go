package ui

import (
	"reflect"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/pimtui/pimtui/sim"
)

// TestReleasedSnapshotsKeepTheHistory steps the explorer on, back with b and on again,
// as a user does, and checks that each iteration it shows is the one an engine whose
// snapshots are never handed back gives at the same point: the memory of a snapshot
// the explorer stops showing is laid into later iterations, and must never be one it
// still shows, the history's, or an iteration b brings back. It also steps the engine
// on under a shown snapshot, as a seek does, and checks the snapshot is untouched.
func TestReleasedSnapshotsKeepTheHistory(t *testing.T) {
	for _, p := range []string{"lolpim", "helios", "neupims", "l3", "gpu-h100", "hermes"} {
		t.Run(p, func(t *testing.T) {
			if p == "hermes" && testing.Short() {
				t.Skip("a Hermes engine tracks every neuron of LLaMA2-70B")
			}
			m := benchModel(t, p, 200, 60)
			ref, err := sim.New(m.cfg)
			if err == nil {
				err = ref.StepTo(m.cfg.OpenAt)
			}
			if err != nil {
				t.Fatal(err)
			}
			want, err := ref.Step()
			if err != nil {
				t.Fatal(err)
			}
			check := func(move string) {
				t.Helper()
				if m.snap == nil || m.snap.Step != want.Step || !reflect.DeepEqual(m.snap, want) {
					t.Fatalf("after %s the explorer shows a different iteration %d than the reference (%d)", move, m.snap.Step, want.Step)
				}
			}
			check("the first step")
			for _, move := range "nnnnnbbbnnbbbbnnnnnnnnbn" {
				if move == 'b' {
					m.Update(m.request(true)())
					want = ref.Back()
				} else {
					m.benchStep()
					if want, err = ref.Step(); err != nil {
						t.Fatal(err)
					}
				}
				check(string(move))
				_ = m.View()
			}
			// A seek steps the engine on while the explorer still shows its snapshot.
			shown := m.snap
			for range 3 {
				if _, err := m.eng.Step(); err != nil {
					t.Fatal(err)
				}
			}
			if !reflect.DeepEqual(shown, want) {
				t.Fatal("stepping the engine on changed the snapshot on screen")
			}
		})
	}
}

// TestCompareReleasesKeepTheHistory is the same for the compare view's two sides.
func TestCompareReleasesKeepTheHistory(t *testing.T) {
	a := Side{Name: "lolpim", Config: benchConfig(t, "lolpim")}
	b := Side{Name: "helios", Config: benchConfig(t, "helios")}
	m, err := NewCompare(a, b, Options{})
	if err != nil {
		t.Fatal(err)
	}
	m.Update(tea.WindowSizeMsg{Width: 200, Height: 60})
	var refs [2]*sim.Engine
	var want [2]*sim.Snapshot
	for i, s := range []Side{a, b} {
		if refs[i], err = sim.New(interactive(s.Config)); err != nil {
			t.Fatal(err)
		}
	}
	for _, move := range "nnnnnbbnnnbbbnnnnn" {
		m.Update(m.request(move == 'b')())
		for i, e := range refs {
			if move == 'b' {
				want[i] = e.Back()
			} else if want[i], err = e.Step(); err != nil {
				t.Fatal(err)
			}
			if s := m.sides[i].snap; !reflect.DeepEqual(s, want[i]) {
				t.Fatalf("after %c side %s shows a different iteration %d than the reference (%d)", move, SideLetter(i), s.Step, want[i].Step)
			}
		}
		_ = m.View()
	}
}
