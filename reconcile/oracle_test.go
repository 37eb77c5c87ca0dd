package reconcile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/structs"
)

// TestOracle replays the reference scenarios recorded from Nomad v1.6.5's
// reconciler (schema: testdata/oracle/README.md) through Reconcile and
// compares every stable field, and every unstable field against its
// recorded summary. The folder comes from DROVER_ORACLE_DIR, by default
// testdata/oracle in this package (a copy kept in the repository, so a
// fresh clone anywhere runs it).
//
// documentedDifferences lists the scenarios where drover deliberately
// differs from Nomad; see ORACLE.md. It is keyed by behaviour, not by
// scenario: each entry says how to recognise an affected scenario.
func TestOracle(t *testing.T) {
	dir := oracleDir(t)
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	type familyCount struct{ total, match, documented int }
	families := map[string]*familyCount{}
	var order []string
	total, matched, documented := 0, 0, 0
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var file oracleFile
		if err := json.Unmarshal(raw, &file); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, sc := range file.Scenarios {
			fam := sc.Family
			if families[fam] == nil {
				families[fam] = &familyCount{}
				order = append(order, fam)
			}
			fc := families[fam]
			fc.total++
			total++
			diffs := runOracleScenario(sc)
			reason := documentedDifference(sc, diffs)
			switch {
			case len(diffs) == 0:
				fc.match++
				matched++
			case reason != "":
				fc.documented++
				documented++
				t.Logf("%s: documented difference (%s): %s", sc.Name, reason, strings.Join(diffs, "; "))
			default:
				t.Errorf("%s: %s", sc.Name, strings.Join(diffs, "\n\t"))
			}
		}
	}
	if total == 0 {
		t.Fatalf("no oracle scenarios in %s", dir)
	}
	sort.Strings(order)
	for _, fam := range order {
		fc := families[fam]
		fmt.Printf("oracle %-12s %3d/%3d match (%d documented differences)\n", fam+":", fc.match, fc.total, fc.documented)
	}
	fmt.Printf("oracle: %d/%d scenarios match (%d documented differences)\n", matched, total, documented)
}

// documentedDifferences are the deliberate differences from Nomad (see
// ORACLE.md): a predicate that recognises an affected scenario by its
// input, and the reason. Map-order and wall-clock effects are not listed
// here: the oracle records them as unstable fields, which are checked
// against their summaries.
var documentedDifferences = []struct {
	reason string
	match  func(sc oracleScenario, diffs []string) bool
}{
	{
		reason: "a batch alloc forced to reschedule while it still counts is only replaced; Nomad also updates it",
		match: func(sc oracleScenario, _ []string) bool {
			if !sc.Input.Batch {
				return false
			}
			for _, a := range sc.Input.Allocs {
				if a.DesiredTransition.ForceReschedule && a.DesiredStatus == structs.AllocDesiredStatusRun &&
					a.ClientStatus != structs.AllocClientStatusFailed && a.Update != "ignore" {
					return true
				}
			}
			return false
		},
	},
	{
		reason: "with disconnect support only server-stopped terminal allocs are set aside; allocs that ended on their own count (Nomad 1.6 sets them all aside: its failed allocs are not rescheduled, its finished batch allocs run again)",
		match: func(sc oracleScenario, _ []string) bool {
			if !sc.Input.SupportsDisconnectedClients {
				return false
			}
			in, _ := oracleToInput(sc.Input)
			for _, a := range in.Allocs {
				tg := a.Job.LookupTaskGroup(a.TaskGroup)
				if tg != nil && tg.MaxClientDisconnect != nil && !a.ServerTerminalStatus() && a.ClientTerminalStatus() && !needsToReconnect(a) {
					return true
				}
			}
			return false
		},
	},
}

func documentedDifference(sc oracleScenario, diffs []string) string {
	for _, d := range documentedDifferences {
		if d.match(sc, diffs) {
			return d.reason
		}
	}
	return ""
}

// oracleDir is DROVER_ORACLE_DIR, or testdata/oracle relative to this
// package's directory (where go test runs the package's tests).
func oracleDir(t *testing.T) string {
	if d := os.Getenv("DROVER_ORACLE_DIR"); d != "" {
		return d
	}
	return filepath.Join("testdata", "oracle")
}

// The JSON schema of the oracle files.

type oracleFile struct {
	NomadVersion string           `json:"nomad_version"`
	Family       string           `json:"family"`
	Scenarios    []oracleScenario `json:"scenarios"`
}

type oracleScenario struct {
	Name     string          `json:"name"`
	Family   string          `json:"family"`
	Input    oracleInput     `json:"input"`
	Output   json.RawMessage `json:"output"`
	Unstable []string        `json:"unstable"`
}

type oracleInput struct {
	Now                         time.Time              `json:"now"`
	EvalID                      string                 `json:"eval_id"`
	EvalPriority                int                    `json:"eval_priority"`
	Batch                       bool                   `json:"batch"`
	SupportsDisconnectedClients bool                   `json:"supports_disconnected_clients"`
	JobID                       string                 `json:"job_id"`
	Job                         *oracleJob             `json:"job"`
	Deployment                  *oracleDeployment      `json:"deployment"`
	TaintedNodes                map[string]*oracleNode `json:"tainted_nodes"`
	Allocs                      []oracleAlloc          `json:"allocs"`
}

type oracleJob struct {
	ID             string        `json:"id"`
	Namespace      string        `json:"namespace"`
	Version        uint64        `json:"version"`
	CreateIndex    uint64        `json:"create_index"`
	JobModifyIndex uint64        `json:"job_modify_index"`
	Stop           bool          `json:"stop"`
	Multiregion    bool          `json:"multiregion"`
	Type           string        `json:"type"`
	Groups         []oracleGroup `json:"groups"`
}

type oracleGroup struct {
	Name   string `json:"name"`
	Count  int    `json:"count"`
	Update *struct {
		MaxParallel      int           `json:"max_parallel"`
		Canary           int           `json:"canary"`
		AutoRevert       bool          `json:"auto_revert"`
		AutoPromote      bool          `json:"auto_promote"`
		MinHealthyTime   time.Duration `json:"min_healthy_time"`
		HealthyDeadline  time.Duration `json:"healthy_deadline"`
		ProgressDeadline time.Duration `json:"progress_deadline"`
		Stagger          time.Duration `json:"stagger"`
		HealthCheck      string        `json:"health_check"`
	} `json:"update"`
	Reschedule *struct {
		Attempts      int           `json:"attempts"`
		Interval      time.Duration `json:"interval"`
		Delay         time.Duration `json:"delay"`
		DelayFunction string        `json:"delay_function"`
		MaxDelay      time.Duration `json:"max_delay"`
		Unlimited     bool          `json:"unlimited"`
	} `json:"reschedule"`
	MaxClientDisconnect       *time.Duration `json:"max_client_disconnect"`
	StopAfterClientDisconnect *time.Duration `json:"stop_after_client_disconnect"`
	Tasks                     []struct {
		Name        string        `json:"name"`
		KillTimeout time.Duration `json:"kill_timeout"`
	} `json:"tasks"`
}

type oracleDeployment struct {
	ID                string `json:"id"`
	JobVersion        uint64 `json:"job_version"`
	JobCreateIndex    uint64 `json:"job_create_index"`
	Status            string `json:"status"`
	StatusDescription string `json:"status_description"`
	Groups            map[string]struct {
		Promoted         bool          `json:"promoted"`
		DesiredCanaries  int           `json:"desired_canaries"`
		DesiredTotal     int           `json:"desired_total"`
		PlacedCanaries   []string      `json:"placed_canaries"`
		PlacedAllocs     int           `json:"placed_allocs"`
		HealthyAllocs    int           `json:"healthy_allocs"`
		UnhealthyAllocs  int           `json:"unhealthy_allocs"`
		AutoRevert       bool          `json:"auto_revert"`
		AutoPromote      bool          `json:"auto_promote"`
		ProgressDeadline time.Duration `json:"progress_deadline"`
	} `json:"groups"`
}

type oracleNode struct {
	Status                string `json:"status"`
	Drain                 bool   `json:"drain"`
	SchedulingEligibility string `json:"scheduling_eligibility"`
}

type oracleAlloc struct {
	ID               string `json:"id"`
	Name             string `json:"name"`
	NodeID           string `json:"node_id"`
	TaskGroup        string `json:"task_group"`
	DesiredStatus    string `json:"desired_status"`
	ClientStatus     string `json:"client_status"`
	JobVersion       uint64 `json:"job_version"`
	JobCreateIndex   uint64 `json:"job_create_index"`
	DeploymentID     string `json:"deployment_id"`
	DeploymentStatus *struct {
		Healthy   *bool      `json:"healthy"`
		Canary    bool       `json:"canary"`
		Timestamp *time.Time `json:"timestamp"`
	} `json:"deployment_status"`
	PreviousAllocation string `json:"previous_allocation"`
	NextAllocation     string `json:"next_allocation"`
	FollowupEvalID     string `json:"followup_eval_id"`
	DesiredTransition  struct {
		Migrate         bool `json:"migrate"`
		Reschedule      bool `json:"reschedule"`
		ForceReschedule bool `json:"force_reschedule"`
	} `json:"desired_transition"`
	RescheduleTracker *[]struct {
		RescheduleTime time.Time     `json:"reschedule_time"`
		PrevAllocID    string        `json:"prev_alloc_id"`
		PrevNodeID     string        `json:"prev_node_id"`
		Delay          time.Duration `json:"delay"`
	} `json:"reschedule_tracker"`
	TaskStates map[string]struct {
		State      string     `json:"state"`
		Failed     bool       `json:"failed"`
		StartedAt  *time.Time `json:"started_at"`
		FinishedAt *time.Time `json:"finished_at"`
	} `json:"task_states"`
	AllocStates []struct {
		Field string    `json:"field"`
		Value string    `json:"value"`
		Time  time.Time `json:"time"`
	} `json:"alloc_states"`
	MaxNormScore *float64     `json:"max_norm_score"`
	CreateTime   time.Time    `json:"create_time"`
	ModifyTime   time.Time    `json:"modify_time"`
	Update       string       `json:"update"`
	JobGroup     *oracleGroup `json:"job_group"`
}

// The normalized output.

type oracleOutput struct {
	Place             []oraclePlace                        `json:"place"`
	Stop              []oracleStop                         `json:"stop"`
	InplaceUpdate     []string                             `json:"inplace_update"`
	DestructiveUpdate []oracleDestructive                  `json:"destructive_update"`
	AttributeUpdates  map[string]oracleAttribute           `json:"attribute_updates"`
	DisconnectUpdates map[string]oracleDisconnect          `json:"disconnect_updates"`
	ReconnectUpdates  []string                             `json:"reconnect_updates"`
	DeploymentCreated *oracleCreated                       `json:"deployment_created"`
	DeploymentUpdates []oracleDeploymentUpdate             `json:"deployment_updates"`
	DesiredTGUpdates  map[string]map[string]uint64         `json:"desired_tg_updates"`
	FollowupEvals     map[string][]oracleFollowup          `json:"followup_evals"`
	UnstableSummary   map[string]oracleUnstableSummaryItem `json:"unstable_summary,omitempty"`
}

type oraclePlace struct {
	Name               string  `json:"name"`
	TaskGroup          string  `json:"task_group"`
	Canary             bool    `json:"canary"`
	PreviousAllocID    *string `json:"previous_alloc_id"`
	Reschedule         bool    `json:"reschedule"`
	Lost               bool    `json:"lost"`
	DowngradeNonCanary bool    `json:"downgrade_non_canary"`
	MinJobVersion      uint64  `json:"min_job_version"`
}

type oracleStop struct {
	AllocID           string  `json:"alloc_id"`
	ClientStatus      string  `json:"client_status"`
	StatusDescription string  `json:"status_description"`
	FollowupEval      *string `json:"followup_eval"`
}

type oracleDestructive struct {
	AllocID   string `json:"alloc_id"`
	PlaceName string `json:"place_name"`
}

type oracleAttribute struct {
	FollowupEval *string `json:"followup_eval"`
}

type oracleDisconnect struct {
	ClientStatus string  `json:"client_status"`
	FollowupEval *string `json:"followup_eval"`
}

type oracleCreated struct {
	ID                string                        `json:"id"`
	Status            string                        `json:"status"`
	StatusDescription string                        `json:"status_description"`
	Groups            map[string]oracleCreatedGroup `json:"groups"`
}

type oracleCreatedGroup struct {
	DesiredTotal     int   `json:"desired_total"`
	DesiredCanaries  int   `json:"desired_canaries"`
	AutoRevert       bool  `json:"auto_revert"`
	AutoPromote      bool  `json:"auto_promote"`
	ProgressDeadline int64 `json:"progress_deadline"`
}

type oracleDeploymentUpdate struct {
	DeploymentID      string `json:"deployment_id"`
	Status            string `json:"status"`
	StatusDescription string `json:"status_description"`
}

type oracleFollowup struct {
	ID                string    `json:"id"`
	WaitUntil         time.Time `json:"wait_until"`
	TriggeredBy       string    `json:"triggered_by"`
	StatusDescription string    `json:"status_description"`
}

type oracleUnstableSummaryItem struct {
	Min        int             `json:"min"`
	Max        int             `json:"max"`
	InEveryRun json.RawMessage `json:"in_every_run"`
}

// runOracleScenario runs one scenario and returns its differences.
func runOracleScenario(sc oracleScenario) (diffs []string) {
	defer func() {
		if p := recover(); p != nil {
			diffs = append(diffs, fmt.Sprintf("panic: %v", p))
		}
	}()
	in, updates := oracleToInput(sc.Input)
	in.Update = func(existing *structs.Allocation, _ *structs.Job, _ *structs.TaskGroup) (UpdateKind, *structs.Allocation) {
		switch updates[existing.ID] {
		case "inplace":
			return UpdateInPlace, existing.Copy()
		case "destructive":
			return UpdateDestructive, nil
		}
		return UpdateIgnore, nil
	}
	got := normalizeResult(in, Reconcile(in))

	var want oracleOutput
	if err := json.Unmarshal(sc.Output, &want); err != nil {
		return []string{"bad output: " + err.Error()}
	}
	return compareOracle(sc.Unstable, want, got)
}

// oracleToInput converts a scenario input to drover's Input (as the
// oracle README describes), and returns the recorded update per alloc.
func oracleToInput(oi oracleInput) (Input, map[string]string) {
	in := Input{
		Namespace:                   structs.DefaultNamespace,
		JobID:                       oi.JobID,
		Batch:                       oi.Batch,
		SupportsDisconnectedClients: oi.SupportsDisconnectedClients,
		EvalID:                      oi.EvalID,
		EvalPriority:                oi.EvalPriority,
		Now:                         oi.Now,
	}
	jobType := structs.JobTypeService
	if oi.Batch {
		jobType = structs.JobTypeBatch
	}
	base := &structs.Job{ID: oi.JobID, Namespace: structs.DefaultNamespace, Type: jobType}
	if j := oi.Job; j != nil {
		base = &structs.Job{
			ID: j.ID, Name: j.ID, Namespace: j.Namespace, Type: j.Type, Version: j.Version,
			CreateIndex: j.CreateIndex, JobModifyIndex: j.JobModifyIndex, ModifyIndex: j.JobModifyIndex,
			Stop: j.Stop, Priority: 50,
		}
		if j.Multiregion {
			base.Multiregion = &structs.Multiregion{Regions: []*structs.MultiregionRegion{{Name: "east"}, {Name: "west"}}}
		}
		for _, g := range j.Groups {
			base.TaskGroups = append(base.TaskGroups, oracleToGroup(g))
		}
		in.Job = base
		in.Namespace = j.Namespace
	}
	if d := oi.Deployment; d != nil {
		dep := &structs.Deployment{
			ID: d.ID, Namespace: in.Namespace, JobID: oi.JobID, JobVersion: d.JobVersion,
			JobCreateIndex: d.JobCreateIndex, Status: d.Status, StatusDescription: d.StatusDescription,
			TaskGroups: map[string]*structs.DeploymentState{},
		}
		for name, g := range d.Groups {
			dep.TaskGroups[name] = &structs.DeploymentState{
				Promoted: g.Promoted, DesiredCanaries: g.DesiredCanaries, DesiredTotal: g.DesiredTotal,
				PlacedCanaries: g.PlacedCanaries, PlacedAllocs: g.PlacedAllocs, HealthyAllocs: g.HealthyAllocs,
				UnhealthyAllocs: g.UnhealthyAllocs, AutoRevert: g.AutoRevert, AutoPromote: g.AutoPromote,
				ProgressDeadline: g.ProgressDeadline,
			}
		}
		in.Deployment = dep
	}
	in.TaintedNodes = map[string]*structs.Node{}
	for id, n := range oi.TaintedNodes {
		if n == nil {
			in.TaintedNodes[id] = nil
			continue
		}
		in.TaintedNodes[id] = &structs.Node{ID: id, Status: n.Status, Drain: n.Drain, SchedulingEligibility: n.SchedulingEligibility}
	}
	updates := map[string]string{}
	for _, oa := range oi.Allocs {
		in.Allocs = append(in.Allocs, oracleToAlloc(oa, base))
		updates[oa.ID] = oa.Update
	}
	return in, updates
}

func oracleToGroup(g oracleGroup) *structs.TaskGroup {
	tg := &structs.TaskGroup{
		Name: g.Name, Count: g.Count,
		MaxClientDisconnect: g.MaxClientDisconnect, StopAfterClientDisconnect: g.StopAfterClientDisconnect,
	}
	if u := g.Update; u != nil {
		tg.Update = &structs.UpdateStrategy{
			MaxParallel: u.MaxParallel, Canary: u.Canary, AutoRevert: u.AutoRevert, AutoPromote: u.AutoPromote,
			MinHealthyTime: u.MinHealthyTime, HealthyDeadline: u.HealthyDeadline,
			ProgressDeadline: u.ProgressDeadline, Stagger: u.Stagger, HealthCheck: u.HealthCheck,
		}
	}
	if p := g.Reschedule; p != nil {
		tg.ReschedulePolicy = &structs.ReschedulePolicy{
			Attempts: p.Attempts, Interval: p.Interval, Delay: p.Delay, DelayFunction: p.DelayFunction,
			MaxDelay: p.MaxDelay, Unlimited: p.Unlimited,
		}
	}
	for _, t := range g.Tasks {
		tg.Tasks = append(tg.Tasks, &structs.Task{Name: t.Name, Driver: "raw_exec", KillTimeout: t.KillTimeout})
	}
	return tg
}

func oracleToAlloc(oa oracleAlloc, base *structs.Job) *structs.Allocation {
	// The alloc's own job: the current one at the alloc's version and
	// incarnation, with the alloc's group replaced when recorded.
	job := *base
	job.Version, job.CreateIndex = oa.JobVersion, oa.JobCreateIndex
	if oa.JobGroup != nil {
		own := oracleToGroup(*oa.JobGroup)
		groups := make([]*structs.TaskGroup, 0, len(job.TaskGroups)+1)
		replaced := false
		for _, tg := range job.TaskGroups {
			if tg.Name == own.Name {
				tg, replaced = own, true
			}
			groups = append(groups, tg)
		}
		if !replaced {
			groups = append(groups, own)
		}
		job.TaskGroups = groups
	}
	a := &structs.Allocation{
		ID: oa.ID, Namespace: job.Namespace, EvalID: "eval-old", Name: oa.Name, NodeID: oa.NodeID,
		JobID: base.ID, Job: &job, JobVersion: oa.JobVersion, TaskGroup: oa.TaskGroup,
		DesiredStatus: oa.DesiredStatus, ClientStatus: oa.ClientStatus, DeploymentID: oa.DeploymentID,
		PreviousAllocation: oa.PreviousAllocation, NextAllocation: oa.NextAllocation,
		FollowupEvalID: oa.FollowupEvalID,
		CreateTime:     oa.CreateTime.UnixNano(), ModifyTime: oa.ModifyTime.UnixNano(),
	}
	if oa.DesiredTransition.Migrate {
		a.DesiredTransition.Migrate = boolPtr(true)
	}
	if oa.DesiredTransition.Reschedule {
		a.DesiredTransition.Reschedule = boolPtr(true)
	}
	if oa.DesiredTransition.ForceReschedule {
		a.DesiredTransition.ForceReschedule = boolPtr(true)
	}
	if ds := oa.DeploymentStatus; ds != nil {
		a.DeploymentStatus = &structs.AllocDeploymentStatus{Healthy: ds.Healthy, Canary: ds.Canary}
		if ds.Timestamp != nil {
			a.DeploymentStatus.Timestamp = *ds.Timestamp
		}
	}
	if rt := oa.RescheduleTracker; rt != nil {
		a.RescheduleTracker = &structs.RescheduleTracker{Events: []*structs.RescheduleEvent{}}
		for _, e := range *rt {
			a.RescheduleTracker.Events = append(a.RescheduleTracker.Events, &structs.RescheduleEvent{
				RescheduleTime: e.RescheduleTime.UnixNano(), PrevAllocID: e.PrevAllocID, PrevNodeID: e.PrevNodeID, Delay: e.Delay,
			})
		}
	}
	if oa.TaskStates != nil {
		a.TaskStates = map[string]*structs.TaskState{}
		for name, ts := range oa.TaskStates {
			s := &structs.TaskState{State: ts.State, Failed: ts.Failed}
			if ts.StartedAt != nil {
				s.StartedAt = *ts.StartedAt
			}
			if ts.FinishedAt != nil {
				s.FinishedAt = *ts.FinishedAt
			}
			a.TaskStates[name] = s
		}
	}
	for _, s := range oa.AllocStates {
		a.AllocStates = append(a.AllocStates, &structs.AllocState{Field: s.Field, Value: s.Value, Time: s.Time})
	}
	if oa.MaxNormScore != nil {
		a.Metrics = &structs.AllocMetric{ScoreMetaData: []*structs.NodeScoreMeta{{NodeID: oa.NodeID, NormScore: *oa.MaxNormScore}}}
	}
	return a
}

func boolPtr(b bool) *bool { return &b }

// normalizeResult normalizes drover's result as the README normalizes
// Nomad's.
func normalizeResult(in Input, res *Result) oracleOutput {
	out := oracleOutput{
		Place: []oraclePlace{}, Stop: []oracleStop{}, InplaceUpdate: []string{},
		DestructiveUpdate: []oracleDestructive{}, AttributeUpdates: map[string]oracleAttribute{},
		DisconnectUpdates: map[string]oracleDisconnect{}, ReconnectUpdates: []string{},
		DeploymentUpdates: []oracleDeploymentUpdate{}, DesiredTGUpdates: map[string]map[string]uint64{},
		FollowupEvals: map[string][]oracleFollowup{},
	}

	// Follow-up evals are renumbered by (wait_until, group, append order).
	type ranked struct {
		group string
		rank  int
		eval  *structs.Evaluation
	}
	var all []ranked
	for g, evals := range res.DesiredFollowupEvals {
		for i, e := range evals {
			all = append(all, ranked{g, i, e})
		}
	}
	slices.SortFunc(all, func(a, b ranked) int {
		if c := a.eval.WaitUntil.Compare(b.eval.WaitUntil); c != 0 {
			return c
		}
		if c := strings.Compare(a.group, b.group); c != 0 {
			return c
		}
		return a.rank - b.rank
	})
	evalName := map[string]string{}
	for i, r := range all {
		evalName[r.eval.ID] = fmt.Sprintf("followup-%d", i+1)
	}
	ref := func(id string) *string {
		if id == "" {
			return nil
		}
		if n, ok := evalName[id]; ok {
			return &n
		}
		return &id
	}
	for g, evals := range res.DesiredFollowupEvals {
		list := []oracleFollowup{}
		for _, e := range evals {
			list = append(list, oracleFollowup{ID: evalName[e.ID], WaitUntil: e.WaitUntil.UTC(), TriggeredBy: e.TriggeredBy, StatusDescription: e.StatusDescription})
		}
		slices.SortFunc(list, func(a, b oracleFollowup) int { return strings.Compare(a.ID, b.ID) })
		out.FollowupEvals[g] = list
	}

	for _, p := range res.Place {
		op := oraclePlace{Name: p.Name, TaskGroup: p.TaskGroup.Name, Canary: p.Canary, Reschedule: p.Reschedule,
			Lost: p.Lost, DowngradeNonCanary: p.DowngradeNonCanary, MinJobVersion: p.MinJobVersion}
		if p.PreviousAlloc != nil {
			id := p.PreviousAlloc.ID
			op.PreviousAllocID = &id
		}
		out.Place = append(out.Place, op)
	}
	for _, s := range res.Stop {
		out.Stop = append(out.Stop, oracleStop{AllocID: s.Alloc.ID, ClientStatus: s.ClientStatus,
			StatusDescription: s.StatusDescription, FollowupEval: ref(s.FollowupEvalID)})
	}
	for _, a := range res.InPlaceUpdate {
		out.InplaceUpdate = append(out.InplaceUpdate, a.ID)
	}
	for _, d := range res.DestructiveUpdate {
		out.DestructiveUpdate = append(out.DestructiveUpdate, oracleDestructive{AllocID: d.StopAlloc.ID, PlaceName: d.PlaceName})
	}
	for id, a := range res.AttributeUpdates {
		out.AttributeUpdates[id] = oracleAttribute{FollowupEval: ref(a.FollowupEvalID)}
	}
	for id, a := range res.DisconnectUpdates {
		out.DisconnectUpdates[id] = oracleDisconnect{ClientStatus: a.ClientStatus, FollowupEval: ref(a.FollowupEvalID)}
	}
	for id := range res.ReconnectUpdates {
		out.ReconnectUpdates = append(out.ReconnectUpdates, id)
	}
	if d := res.Deployment; d != nil {
		c := &oracleCreated{ID: d.ID, Status: d.Status, StatusDescription: d.StatusDescription, Groups: map[string]oracleCreatedGroup{}}
		if in.Deployment == nil || d.ID != in.Deployment.ID {
			c.ID = "new-deployment"
		}
		for g, s := range d.TaskGroups {
			c.Groups[g] = oracleCreatedGroup{DesiredTotal: s.DesiredTotal, DesiredCanaries: s.DesiredCanaries,
				AutoRevert: s.AutoRevert, AutoPromote: s.AutoPromote, ProgressDeadline: int64(s.ProgressDeadline)}
		}
		out.DeploymentCreated = c
	}
	for _, u := range res.DeploymentUpdates {
		out.DeploymentUpdates = append(out.DeploymentUpdates, oracleDeploymentUpdate{u.DeploymentID, u.Status, u.StatusDescription})
	}
	for g, d := range res.DesiredTGUpdates {
		out.DesiredTGUpdates[g] = map[string]uint64{
			"place": d.Place, "stop": d.Stop, "ignore": d.Ignore, "inplace_update": d.InPlaceUpdate,
			"destructive_update": d.DestructiveUpdate, "migrate": d.Migrate, "canary": d.Canary,
		}
	}
	sortByJSON(out.Place)
	sortByJSON(out.Stop)
	sortByJSON(out.DestructiveUpdate)
	sort.Strings(out.InplaceUpdate)
	sort.Strings(out.ReconnectUpdates)
	return out
}

// sortByJSON sorts a list by the compact JSON of its entries, so that
// lists compare as multisets.
func sortByJSON[T any](list []T) {
	keys := make(map[int]string, len(list))
	idx := make([]int, len(list))
	for i := range list {
		b, _ := json.Marshal(list[i])
		keys[i] = string(b)
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return keys[idx[a]] < keys[idx[b]] })
	sorted := make([]T, len(list))
	for i, j := range idx {
		sorted[i] = list[j]
	}
	copy(list, sorted)
}

// compareOracle compares drover's normalized output with Nomad's: stable
// fields exactly, unstable ones against their summaries.
func compareOracle(unstable []string, want, got oracleOutput) []string {
	var diffs []string
	isUnstable := func(key string) bool { return slices.Contains(unstable, key) }
	check := func(key string, w, g any) {
		if isUnstable(key) {
			diffs = append(diffs, checkUnstable(key, want.UnstableSummary[key], g)...)
			return
		}
		if !reflect.DeepEqual(w, g) {
			diffs = append(diffs, fmt.Sprintf("%s: want %s, got %s", key, compactJSON(w), compactJSON(g)))
		}
	}
	sortByJSON(want.Place)
	sortByJSON(want.Stop)
	sortByJSON(want.DestructiveUpdate)
	check("place", want.Place, got.Place)
	check("stop", want.Stop, got.Stop)
	check("inplace_update", want.InplaceUpdate, got.InplaceUpdate)
	check("destructive_update", want.DestructiveUpdate, got.DestructiveUpdate)
	check("attribute_updates", want.AttributeUpdates, got.AttributeUpdates)
	check("disconnect_updates", want.DisconnectUpdates, got.DisconnectUpdates)
	check("reconnect_updates", want.ReconnectUpdates, got.ReconnectUpdates)
	check("deployment_updates", want.DeploymentUpdates, got.DeploymentUpdates)
	if isUnstable("deployment_created") {
		diffs = append(diffs, checkUnstable("deployment_created", want.UnstableSummary["deployment_created"], got.DeploymentCreated)...)
	} else if !reflect.DeepEqual(want.DeploymentCreated, got.DeploymentCreated) {
		diffs = append(diffs, fmt.Sprintf("deployment_created: want %s, got %s", compactJSON(want.DeploymentCreated), compactJSON(got.DeploymentCreated)))
	}

	groups := map[string]bool{}
	for g := range want.DesiredTGUpdates {
		groups[g] = true
	}
	for g := range got.DesiredTGUpdates {
		groups[g] = true
	}
	for _, g := range sortedKeys(groups) {
		w, ok := want.DesiredTGUpdates[g]
		gc, gok := got.DesiredTGUpdates[g]
		if !ok || !gok {
			diffs = append(diffs, fmt.Sprintf("desired_tg_updates.%s: present in want %v, in got %v", g, ok, gok))
			continue
		}
		for _, c := range []string{"place", "stop", "ignore", "inplace_update", "destructive_update", "migrate", "canary"} {
			key := "desired_tg_updates." + g + "." + c
			if isUnstable(key) {
				s := want.UnstableSummary[key]
				if v := int(gc[c]); v < s.Min || v > s.Max {
					diffs = append(diffs, fmt.Sprintf("%s: %d outside [%d, %d]", key, v, s.Min, s.Max))
				}
				continue
			}
			if w[c] != gc[c] {
				diffs = append(diffs, fmt.Sprintf("%s: want %d, got %d", key, w[c], gc[c]))
			}
		}
	}

	fgroups := map[string]bool{}
	for g := range want.FollowupEvals {
		fgroups[g] = true
	}
	for g := range got.FollowupEvals {
		fgroups[g] = true
	}
	for _, g := range sortedKeys(fgroups) {
		key := "followup_evals." + g
		if isUnstable(key) {
			diffs = append(diffs, checkUnstable(key, want.UnstableSummary[key], got.FollowupEvals[g])...)
			continue
		}
		if !reflect.DeepEqual(want.FollowupEvals[g], got.FollowupEvals[g]) {
			diffs = append(diffs, fmt.Sprintf("%s: want %s, got %s", key, compactJSON(want.FollowupEvals[g]), compactJSON(got.FollowupEvals[g])))
		}
	}
	return diffs
}

// checkUnstable checks an unstable field against its summary: its size is
// within [min, max] and everything present in every Nomad run is present.
func checkUnstable(key string, s oracleUnstableSummaryItem, got any) []string {
	var diffs []string
	v := reflect.ValueOf(got)
	size := 0
	switch v.Kind() {
	case reflect.Slice, reflect.Map:
		size = v.Len()
	case reflect.Pointer:
		if !v.IsNil() {
			size = 1
		}
	}
	if size < s.Min || size > s.Max {
		diffs = append(diffs, fmt.Sprintf("%s (unstable): size %d outside [%d, %d]", key, size, s.Min, s.Max))
	}
	if len(s.InEveryRun) == 0 || string(s.InEveryRun) == "null" {
		return diffs
	}
	switch v.Kind() {
	case reflect.Slice:
		var required []json.RawMessage
		if err := json.Unmarshal(s.InEveryRun, &required); err != nil {
			return append(diffs, key+": bad summary")
		}
		have := map[string]int{}
		for i := range v.Len() {
			have[canonicalJSON(v.Index(i).Interface())]++
		}
		for _, r := range required {
			k := canonicalRaw(r)
			if have[k] == 0 {
				diffs = append(diffs, fmt.Sprintf("%s (unstable): missing %s", key, k))
				continue
			}
			have[k]--
		}
	case reflect.Map:
		var required map[string]json.RawMessage
		if err := json.Unmarshal(s.InEveryRun, &required); err != nil {
			return append(diffs, key+": bad summary")
		}
		for k, r := range required {
			e := v.MapIndex(reflect.ValueOf(k))
			if !e.IsValid() || canonicalJSON(e.Interface()) != canonicalRaw(r) {
				diffs = append(diffs, fmt.Sprintf("%s (unstable): entry %s differs", key, k))
			}
		}
	case reflect.Pointer:
		var required map[string]json.RawMessage
		if err := json.Unmarshal(s.InEveryRun, &required); err != nil {
			return append(diffs, key+": bad summary")
		}
		if v.IsNil() {
			if len(required) > 0 {
				diffs = append(diffs, key+" (unstable): absent but fields agreed in every run")
			}
			break
		}
		var mine map[string]json.RawMessage
		b, _ := json.Marshal(got)
		_ = json.Unmarshal(b, &mine)
		for k, r := range required {
			if k == "groups" {
				var wg, gg map[string]json.RawMessage
				_ = json.Unmarshal(r, &wg)
				_ = json.Unmarshal(mine[k], &gg)
				for name, w := range wg {
					if canonicalRaw(w) != canonicalRaw(gg[name]) {
						diffs = append(diffs, fmt.Sprintf("%s (unstable): group %s differs", key, name))
					}
				}
				continue
			}
			if canonicalRaw(r) != canonicalRaw(mine[k]) {
				diffs = append(diffs, fmt.Sprintf("%s (unstable): field %s differs", key, k))
			}
		}
	}
	return diffs
}

func canonicalJSON(v any) string {
	b, _ := json.Marshal(v)
	return canonicalRaw(b)
}

// canonicalRaw re-encodes JSON with sorted keys and times normalized.
func canonicalRaw(b []byte) string {
	var v any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return string(b)
	}
	v = normalizeTimes(v)
	out, _ := json.Marshal(v)
	return string(out)
}

func normalizeTimes(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = normalizeTimes(e)
		}
	case []any:
		for i, e := range x {
			x[i] = normalizeTimes(e)
		}
	case string:
		if t, err := time.Parse(time.RFC3339Nano, x); err == nil {
			return t.UTC().Format(time.RFC3339Nano)
		}
	}
	return v
}

func compactJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
