package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// DeploymentListCommand is `drover deployment list`.
type DeploymentListCommand struct{ Meta }

func (c *DeploymentListCommand) Synopsis() string { return "Lists deployments" }

func (c *DeploymentListCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover deployment list [options]

  Lists the deployments, newest first (with -namespace '*', of every
  namespace, with a Namespace column).
` + clientOptionsUsage() + `

List Options:

  -verbose
    Show full IDs.
` + outputOptionsUsage)
}

func (c *DeploymentListCommand) Run(args []string) int {
	fs := c.FlagSet("deployment list", c.Help, flagSetClient)
	verbose := fs.Bool("verbose", false, "")
	out := addOutputFlags(fs)
	cl, _, ok := c.setup(fs, args, 0, 0, "")
	if !ok {
		return 1
	}
	return listDeployments(&c.Meta, cl, out, *verbose)
}

// listDeployments prints the deployments of the command's namespace.
func listDeployments(m *Meta, cl *api.Client, out *outputFlags, verbose bool) int {
	ds, _, err := cl.Deployments().List(nsQuery(m.Namespace()))
	if err != nil {
		return m.errorf("retrieving deployments", err)
	}
	if out.wanted() {
		return out.write(m, ds)
	}
	printDeploymentList(m.Stdout, ds, verbose)
	return 0
}

// printDeploymentList prints deployments as a table (Namespace column when
// they span namespaces).
func printDeploymentList(w io.Writer, ds []*api.Deployment, verbose bool) {
	printNamespacedList(w, "No deployments found", "ID\tJob ID\tJob Version\tStatus\tDescription", len(ds),
		func(i int) string { return ds[i].Namespace },
		func(i int) string {
			d := ds[i]
			return fmt.Sprintf("%s\t%s\t%d\t%s\t%s", limit(d.ID, verbose), d.JobID, d.JobVersion, d.Status, d.StatusDescription)
		})
}
