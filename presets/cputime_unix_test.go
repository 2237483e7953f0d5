//go:build unix

package presets

import (
	"syscall"
	"time"
)

// cpuTime is the processor time this test process has used. Budgets on a default run are
// checked against it rather than the wall clock, which other work on the machine stretches.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
