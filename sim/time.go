// Package sim is pimtui's simulation engine: cost models of the hardware, the request
// lifecycle, one planner per system and a shared list scheduler that places each decode
// iteration's operations on resource lanes. It has no terminal code and is deterministic:
// the same Config and seed give the same snapshots on every machine.
package sim

import (
	"fmt"
	"math"
)

// Time is simulated time in picoseconds. An integer type keeps long runs exact: sums of
// iteration times never drift, and two runs add them in the same order to the same total.
type Time int64

// Common durations.
const (
	Picosecond  Time = 1
	Nanosecond  Time = 1000
	Microsecond Time = 1000 * Nanosecond
	Millisecond Time = 1000 * Microsecond
	Second      Time = 1000 * Millisecond
)

// Seconds returns t in seconds.
func (t Time) Seconds() float64 { return float64(t) / float64(Second) }

// Milliseconds returns t in milliseconds.
func (t Time) Milliseconds() float64 { return float64(t) / float64(Millisecond) }

// Microseconds returns t in microseconds.
func (t Time) Microseconds() float64 { return float64(t) / float64(Microsecond) }

// FromSeconds converts seconds to Time, rounding up so that any positive work takes at
// least one picosecond and a schedule never has zero-length operations by accident.
func FromSeconds(s float64) Time {
	if s <= 0 || math.IsNaN(s) {
		return 0
	}
	if s > float64(math.MaxInt64/2)/float64(Second) {
		return Time(math.MaxInt64 / 2)
	}
	return Time(math.Ceil(s * float64(Second)))
}

// Cycles converts a cycle count at a clock in GHz to Time.
func Cycles(n float64, clockGHz float64) Time {
	return FromSeconds(n / (clockGHz * 1e9))
}

// String formats t with a unit that keeps three significant digits.
func (t Time) String() string {
	a := t
	if a < 0 {
		a = -a
	}
	switch {
	case a >= Second:
		return fmt.Sprintf("%.3gs", t.Seconds())
	case a >= Millisecond:
		return fmt.Sprintf("%.3gms", t.Milliseconds())
	case a >= Microsecond:
		return fmt.Sprintf("%.3gµs", t.Microseconds())
	case a >= Nanosecond:
		return fmt.Sprintf("%.3gns", float64(t)/float64(Nanosecond))
	default:
		return fmt.Sprintf("%dps", int64(t))
	}
}
