package ui

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
)

// Holding r builds one engine: the resets while it is built are under way already, and
// those after it lands find the run at its start, which is what a reset gives.
func TestHeldResetBuildsOnce(t *testing.T) {
	d := newDriver(t, "neupims", 120, 40)
	d.keys("n", "n")
	m := d.m
	before := m.eng
	var started []tea.Cmd
	for range 30 {
		if _, cmd := m.Update(keyPress("r")); cmd != nil {
			started = append(started, cmd)
		}
	}
	if len(started) != 1 {
		t.Fatalf("30 resets started %d builds, want 1", len(started))
	}
	built, ok := started[0]().(loadedMsg)
	if !ok {
		t.Fatalf("the build returned %T", started[0]())
	}
	d.send(built)
	if m.eng == before || m.eng != built.eng || m.snap == nil || m.snap.Step != 1 {
		t.Fatalf("the reset was not adopted: engine replaced %v, snapshot %v", m.eng != before, m.snap)
	}
	for range 30 {
		if _, cmd := m.Update(keyPress("r")); cmd != nil {
			if _, built := cmd().(loadedMsg); built {
				t.Fatal("a reset at the run's first step started a build")
			}
		}
	}
	if !strings.Contains(d.screen(), "the run is at its start already") {
		t.Fatalf("a reset at the start says nothing:\n%s", d.screen())
	}
	d.keys("n")
	if _, cmd := m.Update(keyPress("r")); cmd == nil {
		t.Fatal("a reset at step 2 started nothing")
	}
}

// Explorers sharing build slots build no more engines at once than there are slots.
func TestBuildSlotsBoundConcurrentBuilds(t *testing.T) {
	slots := make(chan struct{}, 2)
	var running, most atomic.Int32
	var cmds []tea.Cmd
	for range 6 {
		b := &builder{slots: slots}
		cmds = append(cmds, b.build(func(seq int) tea.Msg {
			n := running.Add(1)
			for {
				m := most.Load()
				if n <= m || most.CompareAndSwap(m, n) {
					break
				}
			}
			time.Sleep(20 * time.Millisecond)
			running.Add(-1)
			return seq
		}))
	}
	done := make(chan tea.Msg)
	for _, c := range cmds {
		go func() { done <- c() }()
	}
	for range cmds {
		<-done
	}
	if most.Load() != 2 {
		t.Fatalf("%d builds ran at once with 2 slots", most.Load())
	}
}
