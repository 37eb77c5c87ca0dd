package main

import (
	"flag"
	"fmt"

	"github.com/hashicorp/nomad/api"
)

// deploymentAction is what promote, fail, pause and resume share: find
// the deployment by prefix, act on it, print what happened and monitor
// the evaluation the action created (unless -detach).
type deploymentAction struct {
	*Meta
	name string // "promote", ...
	done string // "promoted", ...
}

// run parses args (after the command's own flags are registered on fs),
// and calls act on the deployment found.
func (a deploymentAction) run(fs *flag.FlagSet, args []string,
	act func(c *api.Client, d *api.Deployment) (*api.DeploymentUpdateResponse, error)) int {
	detach := fs.Bool("detach", false, "")
	verbose := fs.Bool("verbose", false, "")
	cl, rest, ok := a.setup(fs, args, 1, 1, "<deployment>")
	if !ok {
		return 1
	}
	d, err := a.deploymentByPrefix(cl, rest[0])
	if err != nil {
		return a.errorf("", err)
	}
	resp, err := act(cl, d)
	if err != nil {
		return a.errorf(fmt.Sprintf("%s deployment %q", actionVerb(a.name), limit(d.ID, *verbose)), err)
	}
	fmt.Fprintf(a.Stdout, "Deployment %q %s\n", limit(d.ID, *verbose), a.done)
	if resp.EvalID == "" || *detach {
		return 0
	}
	return newMonitor(a.Meta, cl, d.Namespace, *verbose).run(resp.EvalID)
}

func actionVerb(name string) string {
	switch name {
	case "promote":
		return "promoting"
	case "fail":
		return "failing"
	case "pause":
		return "pausing"
	}
	return "resuming"
}

// deploymentActionOptionsUsage is the help of the flags every action has.
const deploymentActionOptionsUsage = `
  -detach
    Return without monitoring the evaluation the action creates.

  -verbose
    Show full IDs.`
