package structs

import "time"

// Deployment statuses, as in Nomad.
const (
	DeploymentStatusRunning      = "running"
	DeploymentStatusPaused       = "paused"
	DeploymentStatusFailed       = "failed"
	DeploymentStatusSuccessful   = "successful"
	DeploymentStatusCancelled    = "cancelled"
	DeploymentStatusPending      = "pending"
	DeploymentStatusBlocked      = "blocked"
	DeploymentStatusUnblocking   = "unblocking"
	DeploymentStatusInitializing = "initializing"
)

// Deployment status descriptions, Nomad's wording.
const (
	DeploymentStatusDescriptionRunning               = "Deployment is running"
	DeploymentStatusDescriptionRunningNeedsPromotion = "Deployment is running but requires manual promotion"
	DeploymentStatusDescriptionRunningAutoPromotion  = "Deployment is running pending automatic promotion"
	DeploymentStatusDescriptionPaused                = "Deployment is paused"
	DeploymentStatusDescriptionSuccessful            = "Deployment completed successfully"
	DeploymentStatusDescriptionStoppedJob            = "Cancelled because job is stopped"
	DeploymentStatusDescriptionNewerJob              = "Cancelled due to newer version of job"
	DeploymentStatusDescriptionFailedAllocations     = "Failed due to unhealthy allocations"
	DeploymentStatusDescriptionProgressDeadline      = "Failed due to progress deadline"
	DeploymentStatusDescriptionFailedByUser          = "Deployment marked as failed"
	DeploymentStatusDescriptionPendingForPeer        = "Deployment is pending, waiting for peer region"
	DeploymentStatusDescriptionBlocked               = "Deployment is complete but waiting for peer region"
)

// Deployment tracks the rollout of one job version: per group, how many
// allocations were placed, are healthy or unhealthy, and the canaries.
type Deployment struct {
	ID                 string
	Namespace          string
	JobID              string
	JobVersion         uint64
	JobModifyIndex     uint64
	JobSpecModifyIndex uint64
	JobCreateIndex     uint64
	IsMultiregion      bool
	TaskGroups         map[string]*DeploymentState
	Status             string
	StatusDescription  string
	EvalPriority       int
	CreateIndex        uint64
	ModifyIndex        uint64
	CreateTime         int64 // unix nanoseconds
	ModifyTime         int64 // unix nanoseconds
}

// DeploymentState is one task group's progress within a deployment.
type DeploymentState struct {
	AutoRevert       bool
	AutoPromote      bool
	ProgressDeadline time.Duration
	// RequireProgressBy is when the deployment fails if no alloc became
	// healthy since.
	RequireProgressBy time.Time
	Promoted          bool
	// PlacedCanaries are the IDs of the canary allocs placed.
	PlacedCanaries  []string
	DesiredCanaries int
	DesiredTotal    int
	PlacedAllocs    int
	HealthyAllocs   int
	UnhealthyAllocs int
}

// Active reports whether the deployment can still make progress (running,
// paused, pending, blocked, unblocking or initializing), as Nomad's.
func (d *Deployment) Active() bool {
	switch d.Status {
	case DeploymentStatusRunning, DeploymentStatusPaused, DeploymentStatusBlocked,
		DeploymentStatusUnblocking, DeploymentStatusInitializing, DeploymentStatusPending:
		return true
	}
	return false
}

// RequiresPromotion reports whether some group has unpromoted canaries.
func (d *Deployment) RequiresPromotion() bool {
	if d == nil || len(d.TaskGroups) == 0 || d.Status != DeploymentStatusRunning {
		return false
	}
	for _, g := range d.TaskGroups {
		if g.DesiredCanaries > 0 && !g.Promoted {
			return true
		}
	}
	return false
}

// HasAutoPromote reports whether every group with canaries auto-promotes.
func (d *Deployment) HasAutoPromote() bool {
	if d == nil || len(d.TaskGroups) == 0 || d.Status != DeploymentStatusRunning {
		return false
	}
	for _, g := range d.TaskGroups {
		if g.DesiredCanaries > 0 && !g.AutoPromote {
			return false
		}
	}
	return true
}

// Copy returns a deep copy of the deployment.
func (d *Deployment) Copy() *Deployment {
	if d == nil {
		return nil
	}
	c := *d
	c.TaskGroups = make(map[string]*DeploymentState, len(d.TaskGroups))
	for k, v := range d.TaskGroups {
		s := *v
		s.PlacedCanaries = append([]string(nil), v.PlacedCanaries...)
		c.TaskGroups[k] = &s
	}
	return &c
}

// DeploymentStatusUpdate changes a deployment's status.
type DeploymentStatusUpdate struct {
	DeploymentID      string
	Status            string
	StatusDescription string
}
