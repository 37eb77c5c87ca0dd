package main

import "github.com/drover-sched/drover/nodeagent"

// TaskSupervisorCommand is the hidden `drover task-supervisor SPEC`: the
// binary re-executed by the node agent to start and watch one task.
type TaskSupervisorCommand struct{}

func (c *TaskSupervisorCommand) Synopsis() string {
	return "Supervises one task (started by the node agent)"
}

func (c *TaskSupervisorCommand) Help() string {
	return "Usage: drover " + nodeagent.SupervisorSubcommand + " SPEC\n\n  Started by the node agent; not for direct use."
}

func (c *TaskSupervisorCommand) Run(args []string) int { return nodeagent.SupervisorMain(args) }
