package main

import (
	"github.com/hashicorp/cli"

	"github.com/drover-sched/drover/nodeagent"
)

// hiddenCommands run but are not listed: the task supervisor is the
// drover binary re-executed by the node agent, not a user command.
var hiddenCommands = []string{nodeagent.SupervisorSubcommand}

// commands is the registry of every command, by its name as typed
// ("job run"). Each factory copies meta into a new command.
func commands(meta Meta) map[string]cli.CommandFactory {
	all := map[string]cli.Command{
		"agent":                        &AgentCommand{Meta: meta},
		"version":                      &VersionCommand{Meta: meta},
		nodeagent.SupervisorSubcommand: &TaskSupervisorCommand{},

		"job":                &JobCommand{},
		"job run":            &JobRunCommand{Meta: meta},
		"job plan":           &JobPlanCommand{Meta: meta},
		"job validate":       &JobValidateCommand{Meta: meta},
		"job status":         &JobStatusCommand{Meta: meta},
		"job inspect":        &JobInspectCommand{Meta: meta},
		"job allocs":         &JobAllocsCommand{Meta: meta},
		"job deployments":    &JobDeploymentsCommand{Meta: meta},
		"job history":        &JobHistoryCommand{Meta: meta},
		"job revert":         &JobRevertCommand{Meta: meta},
		"job scale":          &JobScaleCommand{Meta: meta},
		"job dispatch":       &JobDispatchCommand{Meta: meta},
		"job periodic":       &JobPeriodicCommand{},
		"job periodic force": &JobPeriodicForceCommand{Meta: meta},
		"job stop":           &JobStopCommand{Meta: meta},

		"alloc":         &AllocCommand{},
		"alloc status":  &AllocStatusCommand{Meta: meta},
		"alloc logs":    &AllocLogsCommand{Meta: meta},
		"alloc stop":    &AllocStopCommand{Meta: meta},
		"alloc restart": &AllocRestartCommand{Meta: meta},
		"alloc signal":  &AllocSignalCommand{Meta: meta},
		"alloc exec":    &AllocExecCommand{Meta: meta},
		"alloc fs":      &AllocFSCommand{Meta: meta},
		"alloc checks":  &AllocChecksCommand{Meta: meta},

		"eval":        &EvalCommand{},
		"eval list":   &EvalListCommand{Meta: meta},
		"eval status": &EvalStatusCommand{Meta: meta},

		"deployment":         &DeploymentCommand{},
		"deployment list":    &DeploymentListCommand{Meta: meta},
		"deployment status":  &DeploymentStatusCommand{Meta: meta},
		"deployment promote": &DeploymentPromoteCommand{Meta: meta},
		"deployment fail":    &DeploymentFailCommand{Meta: meta},
		"deployment pause":   &DeploymentPauseCommand{Meta: meta},
		"deployment resume":  &DeploymentResumeCommand{Meta: meta},

		"node":             &NodeCommand{},
		"node status":      &NodeStatusCommand{Meta: meta},
		"node drain":       &NodeDrainCommand{Meta: meta},
		"node eligibility": &NodeEligibilityCommand{Meta: meta},

		"service":          &ServiceCommand{},
		"service list":     &ServiceListCommand{Meta: meta},
		"service info":     &ServiceInfoCommand{Meta: meta},
		"service delete":   &ServiceDeleteCommand{Meta: meta},
		"namespace":        &NamespaceCommand{},
		"namespace apply":  &NamespaceApplyCommand{Meta: meta},
		"namespace list":   &NamespaceListCommand{Meta: meta},
		"namespace status": &NamespaceStatusCommand{Meta: meta},
		"namespace delete": &NamespaceDeleteCommand{Meta: meta},

		"operator":                      &OperatorCommand{},
		"operator scheduler":            &OperatorSchedulerCommand{},
		"operator scheduler get-config": &OperatorSchedulerGetConfigCommand{Meta: meta},
		"operator scheduler set-config": &OperatorSchedulerSetConfigCommand{Meta: meta},

		"acl":               &ACLCommand{},
		"acl bootstrap":     &ACLBootstrapCommand{Meta: meta},
		"acl policy":        &ACLPolicyCommand{},
		"acl policy apply":  &ACLPolicyApplyCommand{Meta: meta},
		"acl policy list":   &ACLPolicyListCommand{Meta: meta},
		"acl policy info":   &ACLPolicyInfoCommand{Meta: meta},
		"acl policy delete": &ACLPolicyDeleteCommand{Meta: meta},
		"acl token":         &ACLTokenCommand{},
		"acl token create":  &ACLTokenCreateCommand{Meta: meta},
		"acl token list":    &ACLTokenListCommand{Meta: meta},
		"acl token info":    &ACLTokenInfoCommand{Meta: meta},
		"acl token self":    &ACLTokenSelfCommand{Meta: meta},
		"acl token update":  &ACLTokenUpdateCommand{Meta: meta},
		"acl token delete":  &ACLTokenDeleteCommand{Meta: meta},

		"system":    &SystemCommand{},
		"system gc": &SystemGCCommand{Meta: meta},
	}
	out := make(map[string]cli.CommandFactory, len(all))
	for name, cmd := range all {
		out[name] = func() (cli.Command, error) { return cmd, nil }
	}
	return out
}
