package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// OperatorSchedulerGetConfigCommand is `drover operator scheduler
// get-config`.
type OperatorSchedulerGetConfigCommand struct{ Meta }

func (c *OperatorSchedulerGetConfigCommand) Synopsis() string {
	return "Shows the scheduler configuration"
}

func (c *OperatorSchedulerGetConfigCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover operator scheduler get-config [options]

  Shows the scheduler configuration: the placement algorithm (binpack or
  spread), whether evaluation processing is paused, and the settings
  drover keeps for Nomad's clients.
` + clientOptionsUsage() + `

Get Config Options:
` + outputOptionsUsage)
}

func (c *OperatorSchedulerGetConfigCommand) Run(args []string) int {
	fs := c.FlagSet("operator scheduler get-config", c.Help, flagSetClient)
	out := addOutputFlags(fs)
	cl, _, ok := c.setup(fs, args, 0, 0, "")
	if !ok {
		return 1
	}
	resp, _, err := cl.Operator().SchedulerGetConfiguration(nil)
	if err != nil {
		return c.errorf("querying scheduler configuration", err)
	}
	if out.wanted() {
		return out.write(&c.Meta, resp)
	}
	printSchedulerConfig(c.Stdout, resp.SchedulerConfig)
	return 0
}

// printSchedulerConfig prints a scheduler configuration as Nomad's CLI.
func printSchedulerConfig(w io.Writer, sc *api.SchedulerConfiguration) {
	if sc == nil {
		fmt.Fprintln(w, "No scheduler configuration")
		return
	}
	var k kv
	k.add("Scheduler Algorithm", sc.SchedulerAlgorithm).add("Memory Oversubscription", sc.MemoryOversubscriptionEnabled).
		add("Reject Job Registration", sc.RejectJobRegistration).add("Pause Eval Broker", sc.PauseEvalBroker)
	k.write(w)
	fmt.Fprintln(w)
	var p kv
	p.add("Preemption Service Scheduler", sc.PreemptionConfig.ServiceSchedulerEnabled).
		add("Preemption Batch Scheduler", sc.PreemptionConfig.BatchSchedulerEnabled).
		add("Preemption System Scheduler", sc.PreemptionConfig.SystemSchedulerEnabled).
		add("Preemption SysBatch Scheduler", sc.PreemptionConfig.SysBatchSchedulerEnabled)
	p.write(w)
}
