package assets

import "embed"

// Examples are documented preset files for systems no paper evaluates, each made from an
// embedded preset with `pimtui presets show` and changed in one place; their comments say
// what changes, why one would try it and what to expect, and "# expect:" lines state the
// directions of change against the base preset that the tests check.
//
//go:embed examples/*.toml
var Examples embed.FS
