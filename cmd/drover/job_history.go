package main

import (
	"fmt"
	"strings"
)

// JobHistoryCommand is `drover job history`: a job's versions.
type JobHistoryCommand struct{ Meta }

func (c *JobHistoryCommand) Synopsis() string { return "Lists a job's versions" }

func (c *JobHistoryCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover job history [options] <job>

  Lists the versions of the job (ID or unique prefix), newest first. A
  stable version is one whose deployment succeeded.
` + clientOptionsUsage() + `

History Options:

  -version=<n>
    Show only this version.
` + outputOptionsUsage)
}

func (c *JobHistoryCommand) Run(args []string) int {
	fs := c.FlagSet("job history", c.Help, flagSetClient)
	only := fs.Int64("version", -1, "")
	out := addOutputFlags(fs)
	cl, rest, ok := c.setup(fs, args, 1, 1, "<job>")
	if !ok {
		return 1
	}
	id, ns, err := c.jobByPrefix(cl, rest[0])
	if err != nil {
		return c.errorf("querying job versions", err)
	}
	versions, _, _, err := cl.Jobs().Versions(id, false, nsQuery(ns))
	if err != nil {
		return c.errorf("querying job versions", err)
	}
	if *only >= 0 {
		kept := versions[:0]
		for _, v := range versions {
			if int64(deref(v.Version)) == *only {
				kept = append(kept, v)
			}
		}
		if len(kept) == 0 {
			return c.errorf("", fmt.Errorf("job %q has no version %d", id, *only))
		}
		versions = kept
	}
	if out.wanted() {
		return out.write(&c.Meta, versions)
	}
	for i, v := range versions {
		if i > 0 {
			fmt.Fprintln(c.Stdout)
		}
		var k kv
		k.add("Version", deref(v.Version)).add("Stable", deref(v.Stable)).add("Submit Date", formatUnixNano(deref(v.SubmitTime)))
		if deref(v.Stop) {
			k.add("Stopped", true)
		}
		k.write(c.Stdout)
	}
	return 0
}
