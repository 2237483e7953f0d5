// Package testutil holds what the tests of presets and presets/experiment share.
package testutil

import (
	"os"
	"testing"
)

// Quick says to skip the long reproductions: under -short, and in a plain go test unless
// PIMTUI_HEAVY=1 asks for the full set (.ci/run does; docs/performance.md says how long
// each takes).
func Quick() bool { return testing.Short() || os.Getenv("PIMTUI_HEAVY") != "1" }

// ValidLesson is a small lesson the tests edit one line at a time: two steps of npu-pim,
// blocked and with dual row buffers, and two claims about them.
const ValidLesson = `name = "tiny"
title = "Tiny"
family = "neupims"
summary = "A two-step lesson."

[[step]]
title = "Blocked"
preset = "npu-pim"
set = ["pim.dual_row_buffer=false", "workload.batch=128"]
steps = 2
focus = "timeline"
text = "Blocked PIM."
notice = "Bubbles."

[[step]]
title = "Dual"
preset = "npu-pim"
set = ["pim.dual_row_buffer=true", "workload.batch=128"]
steps = 2
measure_steps = 3
focus = "timeline"
text = "Dual row buffers."
notice = "Fewer bubbles."

[[step.claim]]
text = "Shorter."
metric = "iteration_ms.mean"
op = "<"
than_step = 1

[[step.claim]]
text = "Still busy."
metric = "utilization.npu"
op = ">"
value = 0.01
`
