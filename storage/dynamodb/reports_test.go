package dynamodb_test

import (
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"go.uber.org/zap/zaptest"

	"github.com/drover-sched/drover/controlplane"
	"github.com/drover-sched/drover/internal/awstest"
	"github.com/drover-sched/drover/placement"
	"github.com/drover-sched/drover/reconcile"
	"github.com/drover-sched/drover/scheduler"
	ddb "github.com/drover-sched/drover/storage/dynamodb"
	"github.com/drover-sched/drover/structs"
)

// newCountedHome is newHome on a client whose writes wc counts.
func newCountedHome(t *testing.T, wc *writeCounter) *home {
	client := ddb.NewClient(awstest.Config(t), wc.apply)
	table := awstest.Name("drover-writes")
	if err := ddb.CreateTable(ctx, client, table); err != nil {
		t.Fatal(err)
	}
	s := ddb.New(client, ddb.Config{Table: table})
	log := zaptest.NewLogger(t)
	return &home{t: t, store: s, service: controlplane.New(controlplane.Config{Store: s, Logger: log}),
		eval: &scheduler.Evaluator{State: s, Reconcile: reconcile.Reconcile, Update: placement.UpdateType,
			RescheduleTracker: reconcile.NextRescheduleTracker, Logger: log}}
}

func (h *home) assignments(node string) []*structs.Allocation {
	h.t.Helper()
	as, _, err := h.store.AgentAssignments(ctx, node)
	if err != nil {
		h.t.Fatal(err)
	}
	sort.Slice(as, func(i, j int) bool { return as[i].ID < as[j].ID })
	return as
}

// jobCopies lists the SKs of node's job copies.
func (h *home) jobCopies(node string) []string {
	h.t.Helper()
	out, err := h.store.Client().Query(ctx, &awsddb.QueryInput{TableName: aws.String(h.store.Table()), ConsistentRead: aws.Bool(true),
		KeyConditionExpression:    aws.String("PK = :pk AND begins_with(SK, :p)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: "NODE#" + node}, ":p": &types.AttributeValueMemberS{Value: "JOBV#"}}})
	if err != nil {
		h.t.Fatal(err)
	}
	var sks []string
	for _, it := range out.Items {
		sks = append(sks, it["SK"].(*types.AttributeValueMemberS).Value)
	}
	return sks
}

// TestFirstReportWritesMasterOnly: a report the node agent does not read
// back (running, task states) is one UpdateItem of each master, outside a
// transaction, and leaves the assignment alone; a terminal report
// rewrites master and assignment together and releases the capacity.
func TestFirstReportWritesMasterOnly(t *testing.T) {
	t.Parallel()
	wc := newWriteCounter()
	h := newCountedHome(t, wc)
	h.node("n1", 4000, 1<<20)
	if err := h.eval.Process(ctx, h.register(testJob("web", 3, 100))); err != nil {
		t.Fatal(err)
	}
	as := h.assignments("n1")
	if len(as) != 3 {
		t.Fatalf("%d assignments", len(as))
	}
	wc.reset()
	var reports []*structs.Allocation
	for _, a := range as {
		reports = append(reports, &structs.Allocation{ID: a.ID, ClientStatus: structs.AllocClientStatusRunning,
			TaskStates: map[string]*structs.TaskState{"server": {State: structs.TaskStateRunning, Events: []*structs.TaskEvent{{Type: structs.TaskStarted, Time: 1}}}}})
	}
	if err := h.service.UpdateAllocs(ctx, "n1", reports); err != nil {
		t.Fatal(err)
	}
	written := wc.items("ALLOC#")
	if len(written) != 3 {
		t.Fatalf("a running report of 3 allocs wrote %d alloc items: %v", len(written), written)
	}
	for k, ops := range written {
		if !strings.HasPrefix(k, "JOB#") || len(ops) != 1 || ops[0] != "UpdateItem" {
			t.Fatalf("running report: %s written by %v; want one UpdateItem of the master, the assignment untouched", k, ops)
		}
	}
	for _, a := range must(h.store.AllocsByJob(ctx, "default", "web")) {
		if a.ClientStatus != structs.AllocClientStatusRunning || a.TaskStates["server"] == nil {
			t.Fatalf("alloc %s after the report: %s", a.ID, a.ClientStatus)
		}
	}
	if got := h.assignments("n1"); len(got) != 3 || got[0].Job == nil {
		t.Fatal("the agent's assignments after a running report")
	}

	// Terminal: both items in one transaction, capacity released.
	wc.reset()
	done := as[0]
	if err := h.service.UpdateAllocs(ctx, "n1", []*structs.Allocation{{ID: done.ID, ClientStatus: structs.AllocClientStatusComplete,
		TaskStates: map[string]*structs.TaskState{"server": {State: structs.TaskStateDead}}}}); err != nil {
		t.Fatal(err)
	}
	written = wc.items(done.ID)
	if len(written) != 2 {
		t.Fatalf("a terminal report wrote %v", written)
	}
	for k, ops := range written {
		if len(ops) != 1 || ops[0] != "TransactPut" {
			t.Fatalf("terminal report: %s written by %v, want one transaction", k, ops)
		}
	}
	if got := h.assignments("n1"); !got[indexOf(got, done.ID)].ClientTerminalStatus() {
		t.Fatal("the agent's assignment does not show the alloc complete")
	}
	usage := must(h.store.NodesWithUsage(ctx))
	if usage[0].Allocs != 2 || usage[0].Used.CPU != 200 {
		t.Fatalf("usage after one alloc completed: %+v", usage[0])
	}
	h.checkInvariants()
}

func indexOf(as []*structs.Allocation, id string) int {
	for i, a := range as {
		if a.ID == id {
			return i
		}
	}
	return -1
}

// TestAssignmentsShareTheNodesJobCopy: the allocs a plan places on a node
// refer to one copy of their job version, written with them in the
// node's partition; the agent reads each assignment with the job cut to
// its group; garbage collection removes a copy once no assignment refers
// to it and its version is no longer current.
func TestAssignmentsShareTheNodesJobCopy(t *testing.T) {
	t.Parallel()
	h := newHome(t, ddb.Config{})
	h.node("n1", 100_000, 1<<20)
	job := testJob("web", 5, 100)
	job.TaskGroups = append(job.TaskGroups, &structs.TaskGroup{Name: "side", Count: 1, EphemeralDisk: &structs.EphemeralDisk{SizeMB: 10},
		Tasks: []*structs.Task{{Name: "log", Driver: "raw_exec", Config: map[string]any{"command": "/bin/true"},
			Resources: &structs.Resources{CPU: 10, MemoryMB: 16}}}})
	if err := h.eval.Process(ctx, h.register(job)); err != nil {
		t.Fatal(err)
	}
	if cs := h.jobCopies("n1"); len(cs) != 2 {
		t.Fatalf("job copies on n1 after placing 5 + 1 allocs of two groups: %v, want one per group", cs)
	}
	as := h.assignments("n1")
	if len(as) != 6 {
		t.Fatalf("%d assignments", len(as))
	}
	for _, a := range as {
		if a.Job == nil || len(a.Job.TaskGroups) != 1 || a.Job.TaskGroups[0].Name != a.TaskGroup || a.Job.Version != a.JobVersion {
			t.Fatalf("assignment %s (%s) has job %+v", a.ID, a.TaskGroup, a.Job)
		}
	}
	if as[0].Job == as[1].Job {
		t.Fatal("assignments share one *Job: each must own its copy")
	}

	// A new version replaces the allocs; the old ones finish.
	v2 := job.Copy()
	v2.TaskGroups[0].Tasks[0].Config = map[string]any{"command": "/bin/sleep", "args": []any{"2000"}}
	if err := h.eval.Process(ctx, h.register(v2)); err != nil {
		t.Fatal(err)
	}
	var finished []*structs.Allocation
	for _, a := range h.assignments("n1") {
		if a.DesiredStatus == structs.AllocDesiredStatusStop {
			finished = append(finished, &structs.Allocation{ID: a.ID, ClientStatus: structs.AllocClientStatusComplete,
				TaskStates: map[string]*structs.TaskState{"server": {State: structs.TaskStateDead}}})
		}
	}
	if len(finished) == 0 {
		t.Fatal("the new version stopped no alloc")
	}
	if err := h.service.UpdateAllocs(ctx, "n1", finished); err != nil {
		t.Fatal(err)
	}
	// side's alloc was updated in place to the new version: it refers to
	// the new version's copy too.
	if cs := h.jobCopies("n1"); len(cs) != 4 {
		t.Fatalf("copies before collection: %v, want both groups of both versions", cs)
	}
	if _, err := h.store.GarbageCollect(ctx, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	cs := h.jobCopies("n1")
	kept := map[string]bool{}
	for _, a := range h.assignments("n1") {
		if a.Job == nil {
			t.Fatalf("after collection, assignment %s lost its job copy (copies %v)", a.ID, cs)
		}
		kept[a.TaskGroup] = true
	}
	if len(cs) != len(kept) {
		t.Fatalf("after collection: copies %v for the groups still assigned %v", cs, kept)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
