// Package assets holds the files pimtui embeds besides its presets: the lessons a class
// steps through (lessons/*.toml), and room for examples and screenshots.
package assets

import "embed"

// Lessons holds one TOML file per lesson, lessons/NAME.toml; package presets parses and
// checks them.
//
//go:embed lessons/*.toml
var Lessons embed.FS
