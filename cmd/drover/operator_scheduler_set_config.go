package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// OperatorSchedulerSetConfigCommand is `drover operator scheduler
// set-config`: change the settings given, keep the others.
type OperatorSchedulerSetConfigCommand struct{ Meta }

func (c *OperatorSchedulerSetConfigCommand) Synopsis() string {
	return "Changes the scheduler configuration"
}

func (c *OperatorSchedulerSetConfigCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover operator scheduler set-config [options]

  Changes the settings given as flags and keeps the others.
` + clientOptionsUsage() + `

Set Config Options:

  -scheduler-algorithm=<binpack|spread>
    How placement ranks nodes: fill them (binpack) or spread allocations.

  -pause-eval-broker=<true|false>
    Pause (or resume) evaluation processing.

  -memory-oversubscription=<true|false>, -reject-job-registration=<true|false>
  -preempt-service-scheduler, -preempt-batch-scheduler,
  -preempt-system-scheduler, -preempt-sysbatch-scheduler=<true|false>
    Kept for Nomad's clients; the server says which it enforces.

  -check-index=<index>
    Change the configuration only if its modify index is this one.`)
}

func (c *OperatorSchedulerSetConfigCommand) Run(args []string) int {
	fs := c.FlagSet("operator scheduler set-config", c.Help, flagSetClient)
	algorithm := fs.String("scheduler-algorithm", "", "")
	checkIndex := fs.String("check-index", "", "")
	bools := map[string]*string{}
	for _, name := range []string{"pause-eval-broker", "memory-oversubscription", "reject-job-registration",
		"preempt-service-scheduler", "preempt-batch-scheduler", "preempt-system-scheduler", "preempt-sysbatch-scheduler"} {
		bools[name] = fs.String(name, "", "")
	}
	cl, _, ok := c.setup(fs, args, 0, 0, "")
	if !ok {
		return 1
	}
	resp, _, err := cl.Operator().SchedulerGetConfiguration(nil)
	if err != nil {
		return c.errorf("querying current scheduler configuration", err)
	}
	sc := resp.SchedulerConfig
	if sc == nil {
		sc = &api.SchedulerConfiguration{}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["scheduler-algorithm"] {
		switch *algorithm {
		case string(api.SchedulerAlgorithmBinpack), string(api.SchedulerAlgorithmSpread):
			sc.SchedulerAlgorithm = api.SchedulerAlgorithm(*algorithm)
		default:
			return c.usageError(fs, "-scheduler-algorithm %q: use binpack or spread", *algorithm)
		}
	}
	targets := map[string]*bool{
		"pause-eval-broker": &sc.PauseEvalBroker, "memory-oversubscription": &sc.MemoryOversubscriptionEnabled,
		"reject-job-registration": &sc.RejectJobRegistration, "preempt-service-scheduler": &sc.PreemptionConfig.ServiceSchedulerEnabled,
		"preempt-batch-scheduler": &sc.PreemptionConfig.BatchSchedulerEnabled, "preempt-system-scheduler": &sc.PreemptionConfig.SystemSchedulerEnabled,
		"preempt-sysbatch-scheduler": &sc.PreemptionConfig.SysBatchSchedulerEnabled,
	}
	for name, target := range targets {
		if !set[name] {
			continue
		}
		b, err := strconv.ParseBool(*bools[name])
		if err != nil {
			return c.usageError(fs, "-%s %q: use true or false", name, *bools[name])
		}
		*target = b
	}
	var updated *api.SchedulerSetConfigurationResponse
	if *checkIndex != "" {
		if sc.ModifyIndex, err = parseIndex(*checkIndex); err != nil {
			return c.usageError(fs, "-check-index: %v", err)
		}
		updated, _, err = cl.Operator().SchedulerCASConfiguration(sc, nil)
	} else {
		updated, _, err = cl.Operator().SchedulerSetConfiguration(sc, nil)
	}
	if err != nil {
		return c.errorf("updating scheduler configuration", err)
	}
	if !updated.Updated {
		fmt.Fprintln(c.Stderr, "Scheduler configuration update failed: the configuration changed since -check-index")
		return 1
	}
	fmt.Fprintln(c.Stdout, "Scheduler configuration updated!")
	return 0
}
