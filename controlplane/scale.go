package controlplane

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// ScaleRequest is Nomad's JobScaleRequest: set one group's count (or,
// with Count nil, only record an event), optionally only if the job's
// JobModifyIndex is still JobModifyIndex.
type ScaleRequest struct {
	Namespace, JobID, Group string
	Count                   *int64
	EnforceIndex            bool
	JobModifyIndex          uint64
	Message                 string
	Error                   bool
	Meta                    map[string]any
}

// maxGroupCount is drover's bound on a group's count (as the job parser).
const maxGroupCount = 10000

// ScaleJob changes a task group's count, as `nomad job scale`: a new job
// version (the rest of the spec unchanged) and an evaluation triggered by
// job-scaling that carries the scaling event. A request without a count
// changes nothing and records its event on an evaluation that has
// nothing to do.
func (s *Service) ScaleJob(ctx context.Context, req *ScaleRequest) (*RegisterResponse, error) {
	if req.Group == "" {
		return nil, badRequest("Target.Group: is required (the task group to scale)")
	}
	if req.Count != nil && (*req.Count < 0 || *req.Count > maxGroupCount) {
		return nil, badRequest("Count: must be between 0 and %d (got %d)", maxGroupCount, *req.Count)
	}
	cur, err := s.store.Job(ctx, req.Namespace, req.JobID)
	if err != nil {
		return nil, fmt.Errorf("scale job %s: %w", req.JobID, err)
	}
	tg := cur.LookupTaskGroup(req.Group)
	if tg == nil {
		return nil, badRequest("Target.Group: task group %q specified for scaling does not exist in job %q", req.Group, req.JobID)
	}
	if p := tg.Scaling; req.Count != nil && p != nil {
		// The group's scaling block bounds its count, as Nomad's
		// Job.Scale.
		if *req.Count < p.Min {
			return nil, badRequest("Count: group count was less than scaling policy minimum: %d < %d", *req.Count, p.Min)
		}
		if *req.Count > p.Max {
			return nil, badRequest("Count: group count was greater than scaling policy maximum: %d > %d", *req.Count, p.Max)
		}
	}
	if req.Count != nil && cur.Stop {
		return nil, badRequest("job %q is stopped: run it again before scaling it", req.JobID)
	}
	if req.EnforceIndex && cur.JobModifyIndex != req.JobModifyIndex {
		return nil, storage.Conflictf("enforcing job modify index %d: job %q exists with conflicting job modify index %d",
			req.JobModifyIndex, req.JobID, cur.JobModifyIndex)
	}
	event := &structs.ScalingEvent{TaskGroup: req.Group, Time: uint64(s.now().UnixNano()), Count: req.Count,
		PreviousCount: int64(tg.Count), Message: req.Message, Error: req.Error, Meta: req.Meta}
	job := cur.Copy()
	if req.Count != nil {
		job.LookupTaskGroup(req.Group).Count = int(*req.Count)
	}
	// The new version keeps the current one's source, as Nomad's.
	resp, err := s.register(ctx, &RegisterRequest{Job: job, EnforceIndex: true, JobModifyIndex: cur.JobModifyIndex,
		Submission: s.submissionOf(ctx, cur)}, structs.EvalTriggerScaling, event)
	if err != nil {
		return nil, err
	}
	s.log.Info("job scaled", zap.String("job_id", req.JobID), zap.String("namespace", req.Namespace),
		zap.String("task_group", req.Group), zap.Int64("previous_count", event.PreviousCount), zap.String("eval_id", resp.EvalID))
	return resp, nil
}

// ScaleStatus is Nomad's JobScaleStatusResponse in the domain's words.
type ScaleStatus struct {
	JobID          string
	Namespace      string
	JobCreateIndex uint64
	JobModifyIndex uint64
	JobStopped     bool
	TaskGroups     map[string]*TaskGroupScaleStatus
}

// TaskGroupScaleStatus is one group's desired and actual counts and its
// scaling events, newest first.
type TaskGroupScaleStatus struct {
	Desired   int
	Placed    int
	Running   int
	Healthy   int
	Unhealthy int
	Events    []*structs.ScalingEvent
}

// ScaleStatusStore is what JobScaleStatus reads.
type ScaleStatusStore interface {
	Job(ctx context.Context, namespace, jobID string) (*structs.Job, error)
	AllocsByJob(ctx context.Context, namespace, jobID string) ([]*structs.Allocation, error)
	EvalsByJob(ctx context.Context, namespace, jobID string) ([]*structs.Evaluation, error)
}

// JobScaleStatus answers `GET /v1/job/:id/scale`: per group the desired
// count, the current incarnation's live allocs (placed, running, healthy
// and unhealthy by deployment health) and the scaling events its evals
// carry.
func JobScaleStatus(ctx context.Context, st ScaleStatusStore, namespace, jobID string) (*ScaleStatus, error) {
	job, err := st.Job(ctx, namespace, jobID)
	if err != nil {
		return nil, err
	}
	out := &ScaleStatus{JobID: job.ID, Namespace: job.Namespace, JobCreateIndex: job.CreateIndex,
		JobModifyIndex: job.JobModifyIndex, JobStopped: job.Stop, TaskGroups: map[string]*TaskGroupScaleStatus{}}
	for _, tg := range job.TaskGroups {
		out.TaskGroups[tg.Name] = &TaskGroupScaleStatus{Desired: tg.Count, Events: []*structs.ScalingEvent{}}
	}
	allocs, err := st.AllocsByJob(ctx, namespace, jobID)
	if err != nil {
		return nil, err
	}
	for _, a := range allocs {
		g := out.TaskGroups[a.TaskGroup]
		if g == nil || a.TerminalStatus() || (a.Job != nil && a.Job.CreateIndex != job.CreateIndex) {
			continue
		}
		g.Placed++
		if a.ClientStatus == structs.AllocClientStatusRunning {
			g.Running++
		}
		if h := a.DeploymentStatus; h != nil && h.Healthy != nil {
			if *h.Healthy {
				g.Healthy++
			} else {
				g.Unhealthy++
			}
		}
	}
	evals, err := st.EvalsByJob(ctx, namespace, jobID)
	if err != nil {
		return nil, err
	}
	for i := len(evals) - 1; i >= 0; i-- {
		e := evals[i]
		if e.ScalingEvent == nil || e.CreateIndex < job.CreateIndex {
			continue
		}
		if g := out.TaskGroups[e.ScalingEvent.TaskGroup]; g != nil {
			ev := *e.ScalingEvent
			id := e.ID
			ev.EvalID, ev.CreateIndex = &id, e.CreateIndex
			g.Events = append(g.Events, &ev)
		}
	}
	return out, nil
}

// submissionOf is the source job's version was registered from, or nil.
func (s *Service) submissionOf(ctx context.Context, job *structs.Job) *structs.JobSubmission {
	sub, err := s.store.JobSubmission(ctx, job.Namespace, job.ID, job.Version)
	if err != nil {
		return nil
	}
	return sub
}
