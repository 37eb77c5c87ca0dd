package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/drover-sched/drover/controlplane"
	"github.com/drover-sched/drover/jobspec"
	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// JobRegisterResponse is Nomad's answer to PUT /v1/jobs.
type JobRegisterResponse struct {
	EvalID          string
	EvalCreateIndex uint64
	JobModifyIndex  uint64
	Warnings        string
	KnownLeader     bool
	LastContact     int64
	LastIndex       uint64
	RequestTime     int64
}

// JobDeregisterResponse is Nomad's answer to DELETE /v1/job/:id.
type JobDeregisterResponse struct {
	EvalID          string
	EvalCreateIndex uint64
	JobModifyIndex  uint64
	KnownLeader     bool
	LastContact     int64
	LastIndex       uint64
	RequestTime     int64
}

// JobListStub is a job in GET /v1/jobs, Nomad's shape.
type JobListStub struct {
	ID                string
	ParentID          string
	Name              string
	Namespace         string
	Datacenters       []string
	NodePool          string
	Multiregion       *structs.Multiregion `json:",omitempty"`
	Type              string
	Priority          int
	Periodic          bool
	ParameterizedJob  bool
	Stop              bool
	Status            string
	StatusDescription string
	JobSummary        *JobSummary
	CreateIndex       uint64
	ModifyIndex       uint64
	JobModifyIndex    uint64
	SubmitTime        int64
	Meta              map[string]string `json:",omitempty"`
}

// JobSummary counts a job's allocations per task group by client status,
// Nomad's shape.
type JobSummary struct {
	JobID       string
	Namespace   string
	Summary     map[string]TaskGroupSummary
	Children    *JobChildrenSummary
	CreateIndex uint64
	ModifyIndex uint64
}

// TaskGroupSummary counts one group's allocations.
type TaskGroupSummary struct {
	Queued   int
	Complete int
	Failed   int
	Running  int
	Starting int
	Lost     int
	Unknown  int
}

// JobChildrenSummary counts a periodic or parameterized job's children
// by status (zero for other jobs), Nomad's shape.
type JobChildrenSummary struct {
	Pending int64
	Running int64
	Dead    int64
}

// JobVersionsResponse is Nomad's answer to GET /v1/job/:id/versions.
type JobVersionsResponse struct {
	Versions    []*structs.Job
	Diffs       []*structs.JobDiff
	KnownLeader bool
	LastContact int64
	LastIndex   uint64
}

func (s *Server) registerJob(w http.ResponseWriter, r *http.Request) {
	s.register(w, r, "")
}

// registerJobAt is POST /v1/job/:id, which Nomad also accepts for
// registration; the path's ID must match the job's.
func (s *Server) registerJobAt(w http.ResponseWriter, r *http.Request) {
	s.register(w, r, r.PathValue("id"))
}

// MaxJobBody bounds a job registration's body (bytes). Nomad sets no
// limit; drover stores each job version as one item (400 KB on DynamoDB,
// compressed), so a larger spec is refused up front.
const MaxJobBody = 4 << 20

func (s *Server) register(w http.ResponseWriter, r *http.Request, pathID string) {
	body := http.MaxBytesReader(w, r.Body, MaxJobBody)
	req, err := jobspec.DecodeRegisterRequestOpts(body, jobspec.DecodeOptions{
		Namespace: r.URL.Query().Get("namespace"), Region: r.URL.Query().Get("region"),
	})
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body: larger than drover's limit of %d bytes for a job", MaxJobBody))
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.allowJobNamespace(r, req.Job.Namespace); err != nil {
		s.fail(w, r, err)
		return
	}
	if region := s.cfg.Agent.Region; region != "" && req.Job.Region != region {
		s.fail(w, r, badRequestf("Job.Region: %q is not this cluster's region %q (drover runs one region)", req.Job.Region, region))
		return
	}
	if pathID != "" && req.Job.ID != pathID {
		s.fail(w, r, badRequestf("Job.ID: %q does not match the job ID in the path %q", req.Job.ID, pathID))
		return
	}
	resp, err := s.cfg.Jobs.RegisterJob(r.Context(), &controlplane.RegisterRequest{
		Job: req.Job, EnforceIndex: req.EnforceIndex, JobModifyIndex: req.JobModifyIndex, EvalPriority: req.EvalPriority,
		PreserveCounts: req.PreserveCounts, Warnings: req.Warnings, Submission: submissionOf(req.Submission),
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	setMeta(w, resp.Index)
	writeJSON(w, r, http.StatusOK, &JobRegisterResponse{
		EvalID: resp.EvalID, EvalCreateIndex: resp.EvalCreateIndex, JobModifyIndex: resp.JobModifyIndex,
		Warnings: resp.Warnings, KnownLeader: true, LastIndex: resp.Index,
	})
}

func (s *Server) deregisterJob(w http.ResponseWriter, r *http.Request) {
	purge, err := boolParam(r, "purge")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	resp, err := s.cfg.Jobs.DeregisterJob(r.Context(), namespaceOf(r), r.PathValue("id"), purge)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	setMeta(w, resp.Index)
	writeJSON(w, r, http.StatusOK, &JobDeregisterResponse{
		EvalID: resp.EvalID, EvalCreateIndex: resp.EvalCreateIndex, JobModifyIndex: resp.JobModifyIndex,
		KnownLeader: true, LastIndex: resp.Index,
	})
}

// listJobs answers GET /v1/jobs: stubs in namespace then ID order,
// paginated and filtered (on the full job) as Nomad.
func (s *Server) listJobs(w http.ResponseWriter, r *http.Request) {
	o, err := parsePageOptions(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.query(w, r, []string{storage.TableJobs, storage.TableAllocs, storage.TableEvals}, func(ctx context.Context) (any, error) {
		jobs, err := s.cfg.State.Jobs(ctx, namespaceOf(r), r.URL.Query().Get("prefix"))
		if err != nil {
			return nil, err
		}
		page, next, err := paginate(jobs, o, func(j *structs.Job) pageKey { return jobKey(j.Namespace, j.ID) }, false)
		if err != nil {
			return nil, err
		}
		out := make([]*JobListStub, 0, len(page))
		for _, j := range page {
			j = parentStatus(j)
			sum, err := s.summary(ctx, j)
			if err != nil {
				return nil, err
			}
			out = append(out, &JobListStub{
				ID: j.ID, Name: j.Name, Namespace: j.Namespace, Datacenters: j.Datacenters, NodePool: j.NodePool,
				ParentID: j.ParentID, Periodic: j.IsPeriodic(), ParameterizedJob: j.IsParameterized(),
				Multiregion: j.Multiregion, Type: j.Type, Priority: j.Priority, Stop: j.Stop, Status: j.Status,
				StatusDescription: j.StatusDescription, JobSummary: sum, CreateIndex: j.CreateIndex,
				ModifyIndex: j.ModifyIndex, JobModifyIndex: j.JobModifyIndex, SubmitTime: j.SubmitTime, Meta: j.Meta,
			})
		}
		return &listPage{items: out, next: next}, nil
	})
}

func (s *Server) getJob(w http.ResponseWriter, r *http.Request) {
	s.query(w, r, []string{storage.TableJobs}, func(ctx context.Context) (any, error) {
		j, err := s.cfg.State.Job(ctx, namespaceOf(r), r.PathValue("id"))
		if err != nil {
			return nil, err
		}
		return parentStatus(j), nil
	})
}

// requireJob returns ErrNotFound for an unknown job, as Nomad does for
// the job sub-resources.
func (s *Server) requireJob(ctx context.Context, r *http.Request) (*structs.Job, error) {
	return s.cfg.State.Job(ctx, namespaceOf(r), r.PathValue("id"))
}

// jobAllocations answers GET /v1/job/:id/allocations: stubs of the
// current incarnation's allocations, newest first, paginated.
func (s *Server) jobAllocations(w http.ResponseWriter, r *http.Request) {
	o, err := parsePageOptions(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.query(w, r, []string{storage.TableAllocs}, func(ctx context.Context) (any, error) {
		job, err := s.requireJob(ctx, r)
		if err != nil {
			return nil, err
		}
		allocs, err := s.cfg.State.AllocsByJob(ctx, namespaceOf(r), r.PathValue("id"))
		if err != nil {
			return nil, err
		}
		return allocStubPage(currentIncarnation(job, allocs), o, allocIndexKey, true)
	})
}

// currentIncarnation keeps the allocs of job's incarnation: a job ID
// purged and registered again starts anew, and, as Nomad (which filters
// on the job's CreateIndex), the earlier incarnation's allocs are not
// listed for it.
func currentIncarnation(job *structs.Job, allocs []*structs.Allocation) []*structs.Allocation {
	out := allocs[:0:0]
	for _, a := range allocs {
		if a.Job == nil || a.Job.CreateIndex == job.CreateIndex {
			out = append(out, a)
		}
	}
	return out
}

// stubs returns the allocs' list stubs, in the allocs' order.
func stubs(allocs []*structs.Allocation) []*structs.AllocListStub {
	out := make([]*structs.AllocListStub, 0, len(allocs))
	for _, a := range allocs {
		out = append(out, a.Stub())
	}
	return out
}

// jobEvaluations answers GET /v1/job/:id/evaluations, newest first,
// paginated.
func (s *Server) jobEvaluations(w http.ResponseWriter, r *http.Request) {
	o, err := parsePageOptions(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.query(w, r, []string{storage.TableEvals}, func(ctx context.Context) (any, error) {
		if _, err := s.requireJob(ctx, r); err != nil {
			return nil, err
		}
		evals, err := s.cfg.State.EvalsByJob(ctx, namespaceOf(r), r.PathValue("id"))
		if err != nil {
			return nil, err
		}
		page, next, err := paginate(evals, o, evalIndexKey, true)
		return &listPage{items: page, next: next}, err
	})
}

func (s *Server) jobSummary(w http.ResponseWriter, r *http.Request) {
	s.query(w, r, []string{storage.TableJobs, storage.TableAllocs, storage.TableEvals}, func(ctx context.Context) (any, error) {
		j, err := s.requireJob(ctx, r)
		if err != nil {
			return nil, err
		}
		return s.summary(ctx, j)
	})
}

// summary counts the current incarnation's allocations by client status,
// plus the allocations still queued (could not be placed) as the latest
// evaluation recorded them.
func (s *Server) summary(ctx context.Context, j *structs.Job) (*JobSummary, error) {
	sum := &JobSummary{JobID: j.ID, Namespace: j.Namespace, Summary: map[string]TaskGroupSummary{},
		CreateIndex: j.CreateIndex, ModifyIndex: j.ModifyIndex}
	children, err := s.childrenSummary(ctx, j)
	if err != nil {
		return nil, err
	}
	sum.Children = children
	for _, tg := range j.TaskGroups {
		sum.Summary[tg.Name] = TaskGroupSummary{}
	}
	allocs, err := s.cfg.State.AllocsByJob(ctx, j.Namespace, j.ID)
	if err != nil {
		return nil, err
	}
	for _, a := range allocs {
		if a.Job != nil && a.Job.CreateIndex != j.CreateIndex {
			continue // an earlier incarnation of the job ID
		}
		g := sum.Summary[a.TaskGroup]
		switch a.ClientStatus {
		case structs.AllocClientStatusPending:
			g.Starting++
		case structs.AllocClientStatusRunning:
			g.Running++
		case structs.AllocClientStatusComplete:
			g.Complete++
		case structs.AllocClientStatusFailed:
			g.Failed++
		case structs.AllocClientStatusLost:
			g.Lost++
		case structs.AllocClientStatusUnknown:
			g.Unknown++
		}
		sum.Summary[a.TaskGroup] = g
	}
	evals, err := s.cfg.State.EvalsByJob(ctx, j.Namespace, j.ID)
	if err != nil {
		return nil, err
	}
	// Queued: what the newest evaluation that ran left unplaced.
	for i := len(evals) - 1; i >= 0; i-- {
		e := evals[i]
		if e.Status != structs.EvalStatusComplete && e.Status != structs.EvalStatusBlocked {
			continue
		}
		if e.QueuedAllocations == nil {
			continue
		}
		for tg, q := range e.QueuedAllocations {
			if g, ok := sum.Summary[tg]; ok {
				g.Queued = q
				sum.Summary[tg] = g
			}
		}
		break
	}
	return sum, nil
}

// jobVersions answers GET /v1/job/:id/versions, newest first; the
// versions are paginated (token: the version number) and filtered; with
// ?diffs=true, Diffs holds each listed version's diff against the one
// before it (`nomad job history -p`).
func (s *Server) jobVersions(w http.ResponseWriter, r *http.Request) {
	o, err := parsePageOptions(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	diffs, err := boolParam(r, "diffs")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.query(w, r, []string{storage.TableJobs}, func(ctx context.Context) (any, error) {
		versions, err := s.cfg.State.JobVersions(ctx, namespaceOf(r), r.PathValue("id"))
		if err != nil {
			return nil, err
		}
		// A purged job has no history, and one registered again after a
		// purge only its own, as in Nomad.
		cur, err := s.cfg.State.Job(ctx, namespaceOf(r), r.PathValue("id"))
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			return nil, err
		}
		versions = structs.CurrentIncarnation(versions, cur)
		if len(versions) == 0 {
			return nil, storage.NotFoundf("job %q in namespace %q", r.PathValue("id"), namespaceOf(r))
		}
		page, next, err := paginate(versions, o, func(j *structs.Job) pageKey { return indexKey(j.Version, "") }, true)
		if err != nil {
			return nil, err
		}
		out := &JobVersionsResponse{Versions: page, Diffs: []*structs.JobDiff{}, KnownLeader: true}
		if diffs {
			// Each version against the one before it, as Nomad (the
			// oldest listed has none).
			for i := 0; i+1 < len(page); i++ {
				out.Diffs = append(out.Diffs, structs.DiffJobs(page[i+1], page[i], true))
			}
		}
		return &listPage{items: out, next: next}, nil
	})
}

func (s *Server) jobDeployment(w http.ResponseWriter, r *http.Request) {
	s.query(w, r, []string{storage.TableDeployments}, func(ctx context.Context) (any, error) {
		if _, err := s.requireJob(ctx, r); err != nil {
			return nil, err
		}
		d, err := s.cfg.State.LatestDeployment(ctx, namespaceOf(r), r.PathValue("id"))
		if errorsIsNotFound(err) {
			return nil, nil // Nomad answers null when the job has none
		}
		return d, err
	})
}

// jobDeployments answers GET /v1/job/:id/deployments, newest first,
// paginated.
func (s *Server) jobDeployments(w http.ResponseWriter, r *http.Request) {
	o, err := parsePageOptions(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.query(w, r, []string{storage.TableDeployments}, func(ctx context.Context) (any, error) {
		if _, err := s.requireJob(ctx, r); err != nil {
			return nil, err
		}
		ds, err := s.cfg.State.DeploymentsByJob(ctx, namespaceOf(r), r.PathValue("id"))
		if err != nil {
			return nil, err
		}
		page, next, err := paginate(ds, o, deploymentIndexKey, true)
		return &listPage{items: page, next: next}, err
	})
}

// submissionOf is the job source of a registration, in the domain's type.
func submissionOf(s *jobspec.Submission) *structs.JobSubmission {
	if s == nil {
		return nil
	}
	return &structs.JobSubmission{Source: s.Source, Format: s.Format, VariableFlags: s.VariableFlags, Variables: s.Variables}
}

// jobSubmission answers GET /v1/job/:id/submission (?version=N, default
// the current version): the source the version was registered from, in
// Nomad's JobSubmission shape; 404 when it has none.
func (s *Server) jobSubmission(w http.ResponseWriter, r *http.Request) {
	var version *uint64
	if v := r.URL.Query().Get("version"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			s.fail(w, r, badRequestf("query parameter \"version\": %q is not a job version", v))
			return
		}
		version = &n
	}
	s.query(w, r, []string{storage.TableJobs}, func(ctx context.Context) (any, error) {
		j, err := s.requireJob(ctx, r)
		if err != nil {
			return nil, err
		}
		v := j.Version
		if version != nil {
			v = *version
		}
		return s.cfg.State.JobSubmission(ctx, j.Namespace, j.ID, v)
	})
}
