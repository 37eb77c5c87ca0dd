// Command drover is drover's CLI and its all-in-one dev agent. Flags follow
// Go's flag package, as Nomad's do: -data-dir and --data-dir both work.
package main

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/drover-sched/drover/nodeagent"
)

// command is one subcommand: run gets the arguments after its name and
// returns the exit code.
type command struct {
	synopsis string
	run      func(args []string, stdout, stderr io.Writer) int
	hidden   bool
}

func commands() map[string]command {
	return map[string]command{
		"agent":              {synopsis: "Runs a drover agent (-dev: all in one)", run: runAgent},
		"job run":            {synopsis: "Submits a job (Nomad JSON) and follows its evaluation", run: runJobRun},
		"job status":         {synopsis: "Lists jobs, or shows one job", run: runJobStatus},
		"job stop":           {synopsis: "Stops (or purges) a job", run: runJobStop},
		"alloc status":       {synopsis: "Shows an allocation", run: runAllocStatus},
		"alloc logs":         {synopsis: "Shows a task's stdout or stderr (-stderr, -f, -tail)", run: runAllocLogs},
		"eval status":        {synopsis: "Shows an evaluation", run: runEvalStatus},
		"node status":        {synopsis: "Lists nodes, or shows one node", run: runNodeStatus},
		"version":            {synopsis: "Prints drover's version", run: runVersion},
		"job history":        {synopsis: "Lists a job's versions", run: runJobHistory},
		"job revert":         {synopsis: "Registers an earlier version of a job again", run: runJobRevert},
		"deployment status":  {synopsis: "Lists deployments, or shows one", run: runDeploymentStatus},
		"deployment promote": {synopsis: "Promotes a deployment's canaries", run: runDeploymentPromote},
		"deployment fail":    {synopsis: "Marks a deployment failed (rolls back with auto_revert)", run: runDeploymentFail},
		"deployment pause":   {synopsis: "Pauses a deployment", run: runDeploymentPause},
		"deployment resume":  {synopsis: "Resumes a paused deployment", run: runDeploymentResume},
		"node drain":         {synopsis: "Drains a node (-enable) or stops draining (-disable)", run: runNodeDrain},
		"node eligibility":   {synopsis: "Marks a node eligible or ineligible for placements", run: runNodeEligibility},
		"system gc":          {synopsis: "Garbage-collects finished jobs, allocations and evaluations now", run: runSystemGC},
		nodeagent.SupervisorSubcommand: {hidden: true, run: func(args []string, _, _ io.Writer) int {
			return nodeagent.SupervisorMain(args)
		}},
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	cmds := commands()
	if len(args) >= 2 {
		if c, ok := cmds[args[0]+" "+args[1]]; ok {
			return c.run(args[2:], stdout, stderr)
		}
	}
	if len(args) >= 1 {
		if c, ok := cmds[args[0]]; ok {
			return c.run(args[1:], stdout, stderr)
		}
	}
	usage(stderr, cmds, args)
	return 1
}

func usage(w io.Writer, cmds map[string]command, args []string) {
	if len(args) > 0 && args[0] != "-h" && args[0] != "--help" && args[0] != "help" {
		fmt.Fprintf(w, "Unknown command: %s\n\n", strings.Join(args, " "))
	}
	fmt.Fprintln(w, "Usage: drover <command> [args]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	var names []string
	for n, c := range cmds {
		if !c.hidden {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "    %-20s %s\n", n, cmds[n].synopsis)
	}
}
