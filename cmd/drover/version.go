package main

import (
	"fmt"
	"strings"

	"github.com/drover-sched/drover/agent"
)

// VersionCommand is `drover version`.
type VersionCommand struct{ Meta }

func (c *VersionCommand) Synopsis() string { return "Prints drover's version" }

func (c *VersionCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover version

  Prints the version of this drover binary (also: drover -version).`)
}

func (c *VersionCommand) Run(args []string) int {
	fs := c.FlagSet("version", c.Help, flagSetNone)
	if err := fs.Parse(args); err != nil {
		return 1
	}
	fmt.Fprintf(c.Stdout, "drover v%s\n", agent.Version)
	return 0
}
