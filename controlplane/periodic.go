package controlplane

import (
	"context"
	"fmt"
	"regexp"
	"time"

	"go.uber.org/zap"

	"github.com/drover-sched/drover/scheduler"
	"github.com/drover-sched/drover/structs"
)

// ForcePeriodicResponse is Nomad's PeriodicForceResponse: the launched
// child's evaluation.
type ForcePeriodicResponse struct {
	EvalID          string
	EvalCreateIndex uint64
	Index           uint64
	// ChildJobID is the launched child (not in Nomad's response).
	ChildJobID string
}

// ForcePeriodic launches a periodic job's child now, as Nomad's
// `job periodic force`, whatever prohibit_overlap says. A job that does not
// launch on its own (not periodic, disabled, stopped, or parameterized:
// Nomad's IsPeriodicActive) is a bad request; a second force within the
// same second finds the child launched and is a conflict.
func (s *Service) ForcePeriodic(ctx context.Context, namespace, jobID string) (*ForcePeriodicResponse, error) {
	job, err := s.store.Job(ctx, namespace, jobID)
	if err != nil {
		return nil, fmt.Errorf("force launch of %s: %w", jobID, err)
	}
	switch {
	case !job.IsPeriodic():
		return nil, badRequest("job %q is not periodic", jobID)
	case job.Stop:
		return nil, badRequest("job %q is stopped: a stopped periodic job cannot be launched", jobID)
	case !job.Periodic.Enabled:
		return nil, badRequest("job %q has its periodic block disabled (enabled = false)", jobID)
	case job.IsParameterized():
		return nil, badRequest("job %q is parameterized: dispatch it; each dispatched child is launched periodically", jobID)
	}
	now := s.now()
	res, err := scheduler.LaunchPeriodicChild(ctx, s.store, s.queue, job, now.Truncate(time.Second), now)
	if err != nil {
		return nil, fmt.Errorf("force launch of %s: %w", jobID, err)
	}
	s.log.Info("periodic job force-launched", zap.String("job_id", jobID), zap.String("namespace", namespace),
		zap.String("child_job_id", res.Job.ID), zap.String("eval_id", res.Eval.ID))
	return &ForcePeriodicResponse{EvalID: res.Eval.ID, EvalCreateIndex: res.Eval.CreateIndex, Index: res.Index, ChildJobID: res.Job.ID}, nil
}

// DispatchRequest is Nomad's JobDispatchRequest.
type DispatchRequest struct {
	Namespace string
	JobID     string
	// Payload is at most structs.DispatchPayloadSizeLimit bytes.
	Payload []byte
	Meta    map[string]string
	// IDPrefixTemplate, when set, goes into the child's ID before its
	// random suffix (Nomad's -id-prefix-template).
	IDPrefixTemplate string
	// Priority overrides the job's priority for the child (0: keep it).
	Priority int
	// IdempotencyToken: while a child dispatched with the same token is
	// not dead, a dispatch returns that child instead of a new one.
	IdempotencyToken string
}

// DispatchResponse is Nomad's JobDispatchResponse.
type DispatchResponse struct {
	DispatchedJobID string
	EvalID          string
	EvalCreateIndex uint64
	JobCreateIndex  uint64
	Index           uint64
}

var validIDPrefixTemplate = regexp.MustCompile(`^[a-zA-Z0-9_-]{0,64}$`)

// DispatchJob dispatches a parameterized job into a child job
// "<parent>/dispatch-<unix>-<8 hex>" with the request's payload and meta
// (merged over the job's), registered and evaluated like any job. The
// request is checked as Nomad checks it (ValidateDispatch); every failed
// rule is a bad request naming the field.
func (s *Service) DispatchJob(ctx context.Context, req *DispatchRequest) (*DispatchResponse, error) {
	parent, err := s.store.Job(ctx, req.Namespace, req.JobID)
	if err != nil {
		return nil, fmt.Errorf("dispatch %s: %w", req.JobID, err)
	}
	if !parent.IsParameterized() {
		return nil, badRequest("job %q is not a parameterized job", req.JobID)
	}
	if parent.Stop {
		return nil, badRequest("job %q is stopped: a stopped job cannot be dispatched", req.JobID)
	}
	if err := parent.ParameterizedJob.ValidateDispatch(req.Payload, req.Meta); err != nil {
		return nil, badRequest("%v", err)
	}
	if !validIDPrefixTemplate.MatchString(req.IDPrefixTemplate) {
		return nil, badRequest("IdPrefixTemplate: %q must be at most 64 letters, digits, '-' or '_'", req.IDPrefixTemplate)
	}
	if req.Priority != 0 && (req.Priority < structs.JobMinPriority || req.Priority > structs.JobMaxPriority) {
		return nil, badRequest("Priority: must be between %d and %d (got %d)", structs.JobMinPriority, structs.JobMaxPriority, req.Priority)
	}
	if req.IdempotencyToken != "" {
		if prev, err := s.dispatchedWithToken(ctx, parent, req.IdempotencyToken); err != nil {
			return nil, err
		} else if prev != nil {
			s.log.Info("dispatch with a known idempotency token; returning its child", zap.String("job_id", req.JobID),
				zap.String("child_job_id", prev.ID))
			return &DispatchResponse{DispatchedJobID: prev.ID, JobCreateIndex: prev.CreateIndex, Index: prev.ModifyIndex}, nil
		}
	}
	suffix := structs.GenerateUUID()[:8]
	if req.IDPrefixTemplate != "" {
		suffix = req.IDPrefixTemplate + "-" + suffix
	}
	child := structs.NewDispatchChild(parent, s.now(), suffix, req.Meta, req.Payload, req.IdempotencyToken)
	if req.Priority != 0 {
		child.Priority = req.Priority
	}
	resp, err := s.register(ctx, &RegisterRequest{Job: child, EnforceIndex: true}, structs.EvalTriggerJobRegister, nil)
	if err != nil {
		return nil, fmt.Errorf("dispatch %s: %w", req.JobID, err)
	}
	s.log.Info("parameterized job dispatched", zap.String("job_id", req.JobID), zap.String("namespace", req.Namespace),
		zap.String("child_job_id", child.ID), zap.String("eval_id", resp.EvalID), zap.Int("payload_bytes", len(req.Payload)))
	return &DispatchResponse{DispatchedJobID: child.ID, EvalID: resp.EvalID, EvalCreateIndex: resp.EvalCreateIndex,
		JobCreateIndex: resp.JobModifyIndex, Index: resp.Index}, nil
}

// dispatchedWithToken returns the child of parent dispatched with token
// that is not dead, or nil.
func (s *Service) dispatchedWithToken(ctx context.Context, parent *structs.Job, token string) (*structs.Job, error) {
	kids, err := s.store.Jobs(ctx, parent.Namespace, parent.ID+structs.DispatchLaunchSuffix)
	if err != nil {
		return nil, fmt.Errorf("dispatch %s: children: %w", parent.ID, err)
	}
	for _, k := range kids {
		if k.ParentID == parent.ID && k.DispatchIdempotencyToken == token && k.Status != structs.JobStatusDead {
			return k, nil
		}
	}
	return nil, nil
}
