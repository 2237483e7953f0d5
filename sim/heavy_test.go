package sim

import (
	"os"
	"testing"
)

// quick says to skip the long reproductions: under -short, and in a plain go test unless
// PIMTUI_HEAVY=1 asks for the full set (.ci/run does; docs/performance.md says how long
// each takes).
func quick() bool { return testing.Short() || os.Getenv("PIMTUI_HEAVY") != "1" }
