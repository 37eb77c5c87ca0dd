package controlplane

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/drover-sched/drover/scheduler"
	"github.com/drover-sched/drover/structs"
)

// Planner computes what registering a job would do without committing it
// (scheduler.Evaluator).
type Planner interface {
	PlanJob(ctx context.Context, job *structs.Job) (*scheduler.DryRun, error)
}

// ErrNoPlanner is returned by PlanJob when the service was built without
// a Planner.
var ErrNoPlanner = errors.New("this control plane has no planner")

// PlanRequest is a job plan, as Nomad's JobPlanRequest.
type PlanRequest struct {
	Job *structs.Job
	// Diff asks for the diff against the current version.
	Diff     bool
	Warnings []string
}

// PlanResponse is Nomad's JobPlanResponse in the domain's types.
type PlanResponse struct {
	// JobModifyIndex is the current job's (0: a new job): `job run
	// -check-index` passes it back.
	JobModifyIndex uint64
	// Diff is the contextual diff against the current version (nil unless
	// asked for).
	Diff *structs.JobDiff
	// Annotations are the reconciler's decisions per task group.
	Annotations *structs.PlanAnnotations
	// FailedTGAllocs are the placements that would fail, per group.
	FailedTGAllocs map[string]*structs.AllocMetric
	Warnings       string
}

// Nomad's update types (TaskGroupDiff.Updates keys) and annotations.
const (
	updateIgnore      = "ignore"
	updateCreate      = "create"
	updateDestroy     = "destroy"
	updateMigrate     = "migrate"
	updateCanary      = "canary"
	updateInPlace     = "in-place update"
	updateDestructive = "create/destroy update"

	annotationForcesCreate      = "forces create"
	annotationForcesDestroy     = "forces destroy"
	annotationForcesInPlace     = "forces in-place update"
	annotationForcesDestructive = "forces create/destroy update"
)

// PlanJob answers `nomad job plan`: the same reconcile and placement as
// an evaluation of the job registered now, the diff against the current
// version annotated as Nomad's (per-group update counts, what each task
// change forces), nothing written.
func (s *Service) PlanJob(ctx context.Context, req *PlanRequest) (*PlanResponse, error) {
	if s.planner == nil {
		return nil, ErrNoPlanner
	}
	if err := s.checkNamespace(ctx, req.Job); err != nil {
		return nil, err
	}
	dry, err := s.planner.PlanJob(ctx, req.Job)
	if err != nil {
		return nil, fmt.Errorf("plan job %s: %w", req.Job.ID, err)
	}
	out := &PlanResponse{Annotations: dry.Annotations, FailedTGAllocs: dry.FailedTGAllocs, Warnings: strings.Join(req.Warnings, "\n")}
	if dry.Current != nil {
		out.JobModifyIndex = dry.Current.JobModifyIndex
	}
	if req.Diff {
		var cur *structs.Job
		if dry.Current != nil && !dry.Current.Stop {
			cur = dry.Current
		}
		out.Diff = structs.DiffJobs(cur, dry.Job, true)
		annotate(out.Diff, dry.Annotations)
	}
	return out, nil
}

// annotate fills each group diff's Updates from the plan's decisions and
// marks what count and task changes force, as Nomad's planner does.
func annotate(d *structs.JobDiff, ann *structs.PlanAnnotations) {
	for _, g := range d.TaskGroups {
		var u *structs.DesiredUpdates
		if ann != nil {
			u = ann.DesiredTGUpdates[g.Name]
		}
		if u != nil {
			g.Updates = map[string]uint64{}
			for k, v := range map[string]uint64{updateIgnore: u.Ignore, updateCreate: u.Place, updateMigrate: u.Migrate,
				updateDestroy: u.Stop, updateCanary: u.Canary, updateInPlace: u.InPlaceUpdate, updateDestructive: u.DestructiveUpdate} {
				if v != 0 {
					g.Updates[k] = v
				}
			}
		}
		for _, f := range g.Fields {
			if f.Name != "Count" || f.Type != structs.DiffTypeEdited {
				continue
			}
			o, _ := strconv.Atoi(f.Old)
			n, _ := strconv.Atoi(f.New)
			if n > o {
				f.Annotations = append(f.Annotations, annotationForcesCreate)
			} else if n < o {
				f.Annotations = append(f.Annotations, annotationForcesDestroy)
			}
		}
		for _, t := range g.Tasks {
			switch t.Type {
			case structs.DiffTypeAdded:
				t.Annotations = append(t.Annotations, annotationForcesCreate)
			case structs.DiffTypeDeleted:
				t.Annotations = append(t.Annotations, annotationForcesDestroy)
			case structs.DiffTypeEdited:
				if u != nil && u.DestructiveUpdate > 0 {
					t.Annotations = append(t.Annotations, annotationForcesDestructive)
				} else {
					t.Annotations = append(t.Annotations, annotationForcesInPlace)
				}
			}
		}
	}
}
