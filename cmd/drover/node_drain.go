package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"
)

// NodeDrainCommand is `drover node drain`: start or stop draining a
// node, and monitor the drain until it is done.
type NodeDrainCommand struct{ Meta }

func (c *NodeDrainCommand) Synopsis() string {
	return "Drains a node (-enable) or stops draining (-disable)"
}

func (c *NodeDrainCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover node drain [options] <node>

  Toggles draining of the node (ID or unique prefix). A draining node is
  ineligible for new placements and its allocations are migrated as their
  groups' migrate blocks allow. With -enable the drain is monitored until
  every allocation has left the node, unless -detach; Ctrl-C stops the
  monitor, not the drain.
` + clientOptionsUsage() + `

Node Drain Options:

  -enable, -disable
    Start, or stop, draining the node.

  -deadline=<duration>
    Force the remaining allocations off after this long. Default = 1h

  -no-deadline
    Drain without a deadline: allocations move only as migrate allows.

  -force
    Force every allocation off now, ignoring migrate max_parallel.

  -ignore-system
    Leave system jobs running (drover has none yet).

  -keep-ineligible
    With -disable: keep the node ineligible for placements.

  -detach
    Return once the drain is set, without monitoring.

  -monitor
    Only monitor the node's drain (no change).

  -yes
    Do not ask for confirmation (drover never asks; accepted for scripts).`)
}

func (c *NodeDrainCommand) Run(args []string) int {
	fs := c.FlagSet("node drain", c.Help, flagSetClient)
	enable := fs.Bool("enable", false, "")
	disable := fs.Bool("disable", false, "")
	deadline := fs.Duration("deadline", time.Hour, "")
	force := fs.Bool("force", false, "")
	noDeadline := fs.Bool("no-deadline", false, "")
	ignoreSystem := fs.Bool("ignore-system", false, "")
	keepIneligible := fs.Bool("keep-ineligible", false, "")
	detach := fs.Bool("detach", false, "")
	monitorOnly := fs.Bool("monitor", false, "")
	fs.Bool("yes", false, "")
	cl, rest, ok := c.setup(fs, args, 1, 1, "<node>")
	if !ok {
		return 1
	}
	if *monitorOnly && (*enable || *disable || *detach) {
		return c.usageError(fs, "-monitor cannot be combined with -enable, -disable or -detach")
	}
	if !*monitorOnly && *enable == *disable {
		return c.usageError(fs, "Give exactly one of -enable and -disable")
	}
	var spec *api.DrainSpec
	if *enable {
		deadlineSet := false
		fs.Visit(func(f *flag.Flag) { deadlineSet = deadlineSet || f.Name == "deadline" })
		if (*force && *noDeadline) || (*force && deadlineSet) || (*noDeadline && deadlineSet) {
			fmt.Fprintln(c.Stderr, "Give at most one of -deadline, -force and -no-deadline")
			return 1
		}
		// Nomad's encoding: a negative deadline forces, 0 means none.
		d := *deadline
		switch {
		case *force:
			d = -1
		case *noDeadline:
			d = 0
		case d <= 0:
			fmt.Fprintln(c.Stderr, "-deadline must be positive (use -force to move everything now, -no-deadline for none)")
			return 1
		}
		spec = &api.DrainSpec{Deadline: d, IgnoreSystemJobs: *ignoreSystem}
	}
	node, err := c.nodeByPrefix(cl, rest[0])
	if err != nil {
		return c.errorf("", err)
	}
	var index uint64
	if !*monitorOnly {
		resp, err := cl.Nodes().UpdateDrain(node.ID, spec, *disable && !*keepIneligible, nil)
		if err != nil {
			return c.errorf("updating drain specification", err)
		}
		index = resp.LastIndex
		if *enable {
			fmt.Fprintf(c.Stdout, "%s: Node %q drain strategy set\n", now(), node.ID)
		} else {
			fmt.Fprintf(c.Stdout, "%s: Node %q drain strategy unset\n", now(), node.ID)
		}
	}
	if *disable || *detach {
		return 0
	}
	return c.monitorDrain(cl, node.ID, index, *ignoreSystem)
}

// monitorDrain prints the drain's progress, as Nomad's drain monitor,
// until it completes (0), fails (1) or Ctrl-C (0: the drain goes on).
func (c *NodeDrainCommand) monitorDrain(cl *api.Client, nodeID string, index uint64, ignoreSystem bool) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	fmt.Fprintf(c.Stdout, "%s: Ctrl-C to stop monitoring: will not cancel the node drain\n", now())
	code := 0
	for msg := range cl.Nodes().MonitorDrain(ctx, nodeID, index, ignoreSystem) {
		fmt.Fprintf(c.Stdout, "%s: %s\n", now(), msg)
		if msg.Level == api.MonitorMsgLevelError {
			code = 1
		}
	}
	return code
}
