package main

import (
	"fmt"
	"strings"
)

// NodeEligibilityCommand is `drover node eligibility`: whether new
// allocations may be placed on a node.
type NodeEligibilityCommand struct{ Meta }

func (c *NodeEligibilityCommand) Synopsis() string {
	return "Marks a node eligible or ineligible for placements"
}

func (c *NodeEligibilityCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover node eligibility [options] <node>

  Marks the node (ID or unique prefix) eligible or ineligible for new
  placements; its running allocations are not touched.
` + clientOptionsUsage() + `

Node Eligibility Options:

  -enable, -disable
    Mark the node eligible, or ineligible.`)
}

func (c *NodeEligibilityCommand) Run(args []string) int {
	fs := c.FlagSet("node eligibility", c.Help, flagSetClient)
	enable := fs.Bool("enable", false, "")
	disable := fs.Bool("disable", false, "")
	cl, rest, ok := c.setup(fs, args, 1, 1, "<node>")
	if !ok {
		return 1
	}
	if *enable == *disable {
		return c.usageError(fs, "Give exactly one of -enable and -disable")
	}
	node, err := c.nodeByPrefix(cl, rest[0])
	if err != nil {
		return c.errorf("", err)
	}
	if _, err := cl.Nodes().ToggleEligibility(node.ID, *enable, nil); err != nil {
		return c.errorf("updating scheduling eligibility", err)
	}
	state := "eligible"
	if *disable {
		state = "ineligible"
	}
	fmt.Fprintf(c.Stdout, "Node %q scheduling eligibility set: %s for scheduling\n", node.ID, state)
	return 0
}
