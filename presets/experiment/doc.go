// Package experiment runs what the presets declare and the lessons claim: each paper
// result measured as its paper measured it and scored by one rule, the curves behind
// them, sweeps over parameter values, and lesson claims checked against the steps' runs.
// It reads presets through package presets and runs them on package sim; neither imports
// it.
package experiment
