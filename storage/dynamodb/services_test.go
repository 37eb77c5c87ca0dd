package dynamodb_test

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/drover-sched/drover/storage"
	ddb "github.com/drover-sched/drover/storage/dynamodb"
	"github.com/drover-sched/drover/structs"
)

// partitionSize counts the items under a partition key.
func partitionSize(t *testing.T, s *ddb.Store, pk string) int {
	t.Helper()
	out, err := s.Client().Query(ctx, &awsddb.QueryInput{TableName: aws.String(s.Table()), ConsistentRead: aws.Bool(true),
		KeyConditionExpression:    aws.String("PK = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: pk}}})
	if err != nil {
		t.Fatal(err)
	}
	return len(out.Items)
}

// TestServiceItemsCollected: the registration items of an alloc that
// garbage collection removes go with it (reads never serve them; this
// reclaims the items nobody read).
func TestServiceItemsCollected(t *testing.T) {
	t.Parallel()
	s := newStore(t, ddb.Config{})
	node := &structs.Node{ID: "n1", Name: "n1", Datacenter: "dc1", NodePool: structs.DefaultNodePool, Status: structs.NodeStatusReady,
		SchedulingEligibility: structs.NodeSchedulingEligible,
		NodeResources:         &structs.NodeResources{Cpu: structs.NodeCpuResources{CpuShares: 4000}, Memory: structs.NodeMemoryResources{MemoryMB: 4096}, Disk: structs.NodeDiskResources{DiskMB: 10000}}}
	if _, err := s.UpsertNode(ctx, node); err != nil {
		t.Fatal(err)
	}
	job := &structs.Job{Region: "global", Namespace: "default", ID: "b", Name: "b", Type: structs.JobTypeBatch, Priority: 50,
		NodePool: structs.DefaultNodePool, TaskGroups: []*structs.TaskGroup{{Name: "g", Count: 1,
			EphemeralDisk: &structs.EphemeralDisk{SizeMB: 100},
			Tasks:         []*structs.Task{{Name: "t", Driver: "raw_exec", Resources: &structs.Resources{CPU: 100, MemoryMB: 64}}}}}}
	res, err := s.RegisterJob(ctx, &storage.RegisterJobRequest{Job: job, SubmitTime: time.Now().UnixNano(),
		Eval: &structs.Evaluation{ID: structs.GenerateUUID(), Namespace: "default", JobID: "b", Type: job.Type, Status: structs.EvalStatusPending}})
	if err != nil {
		t.Fatal(err)
	}
	name := structs.AllocName("b", "g", 0)
	a := &structs.Allocation{ID: structs.AllocIDForPlacement("e1", name, false, ""), Namespace: "default", EvalID: "e1", Name: name,
		NodeID: "n1", JobID: "b", JobVersion: res.Job.Version, TaskGroup: "g", AllocatedResources: structs.AllocatedResourcesFor(job.TaskGroups[0]),
		DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusRunning}
	if _, err := s.CommitPlan(ctx, &structs.Plan{EvalID: "e1", Namespace: "default", JobID: "b", Priority: 50,
		JobModifyIndex: res.Job.JobModifyIndex, Placements: []*structs.Allocation{a}}); err != nil {
		t.Fatal(err)
	}
	reg := &structs.ServiceRegistration{ID: structs.ServiceRegistrationID(a.ID, "t", "svc", ""), ServiceName: "svc", Namespace: "default",
		NodeID: "n1", JobID: "b", AllocID: a.ID, Address: "127.0.0.1"}
	if _, err := s.UpsertServiceRegistrations(ctx, "n1", []*structs.ServiceRegistration{reg}); err != nil {
		t.Fatal(err)
	}
	if partitionSize(t, s, "SVCALLOC#"+a.ID) != 1 || partitionSize(t, s, "SVC#default") != 1 {
		t.Fatal("registration items not written")
	}
	if _, err := s.UpdateAllocsFromClient(ctx, "n1", []*structs.Allocation{{ID: a.ID, ClientStatus: structs.AllocClientStatusComplete,
		TaskStates: map[string]*structs.TaskState{"t": {State: structs.TaskStateDead, FinishedAt: time.Now().UTC()}}}}); err != nil {
		t.Fatal(err)
	}
	// The job is stopped: its finished alloc is collected.
	if _, err := s.DeregisterJob(ctx, &storage.DeregisterJobRequest{Namespace: "default", JobID: "b",
		Eval: &structs.Evaluation{ID: structs.GenerateUUID(), Namespace: "default", JobID: "b", Type: job.Type, Status: structs.EvalStatusPending}}); err != nil {
		t.Fatal(err)
	}
	if gcr, err := s.GarbageCollect(ctx, time.Now().Add(time.Hour)); err != nil || gcr.Allocs != 1 {
		t.Fatalf("garbage collection: %+v, %v; want the alloc collected", gcr, err)
	}
	if n, m := partitionSize(t, s, "SVCALLOC#"+a.ID), partitionSize(t, s, "SVC#default"); n != 0 || m != 0 {
		t.Fatalf("after garbage collection: %d alloc-list and %d registration items left, want none", n, m)
	}
}
