//go:build race

package ui

// raceEnabled relaxes timing bounds: the race detector slows everything several times.
const raceEnabled = true
