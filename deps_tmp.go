package main

import (
	_ "charm.land/bubbles/v2/key"
	_ "charm.land/bubbletea/v2"
	_ "charm.land/lipgloss/v2"
	_ "github.com/NimbleMarkets/ntcharts/v2/sparkline"
	_ "github.com/charmbracelet/colorprofile"
	_ "github.com/charmbracelet/x/ansi"
	_ "github.com/pelletier/go-toml/v2"
	_ "github.com/spf13/cobra"
)

func main() {}
