package dynamodb

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drover-sched/drover/jobspec"
	"github.com/drover-sched/drover/structs"
)

func kb(n int) int { return (n + 1023) / 1024 }

// TestItemSizes measures the items of a placement of examples/hello.json
// and derives the write cost per placed alloc (the figures in README.md).
func TestItemSizes(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "..", "examples", "hello.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	req, err := jobspec.DecodeRegisterRequest(f)
	if err != nil {
		t.Fatal(err)
	}
	job := req.Job
	job.Version, job.JobModifyIndex, job.CreateIndex, job.ModifyIndex = 3, 1234, 1000, 1234
	tg := job.TaskGroups[0]
	evalID := structs.GenerateUUID()
	name := structs.AllocName(job.ID, tg.Name, 7)
	a := &structs.Allocation{ID: structs.AllocIDForPlacement(evalID, name, false, ""), Namespace: job.Namespace, EvalID: evalID,
		Name: name, NodeID: structs.GenerateUUID(), NodeName: "ip-10-0-1-23", JobID: job.ID, JobVersion: job.Version, TaskGroup: tg.Name,
		AllocatedResources: structs.AllocatedResourcesFor(tg), DesiredStatus: structs.AllocDesiredStatusRun,
		ClientStatus: structs.AllocClientStatusPending, CreateIndex: 1240, ModifyIndex: 1240, AllocModifyIndex: 1240,
		CreateTime: 1700000000000000000, ModifyTime: 1700000000000000000,
		Metrics: &structs.AllocMetric{NodesEvaluated: 10, NodesInPool: 10, NodePool: "default", NodesAvailable: map[string]int{"dc1": 10},
			ScoreMetaData: []*structs.NodeScoreMeta{{NodeID: structs.GenerateUUID(), Scores: map[string]float64{"binpack": 0.3}, NormScore: 0.3}}}}
	master, assign := allocItems(a, job)
	running := a.Copy()
	running.ClientStatus = structs.AllocClientStatusRunning
	running.TaskStates = map[string]*structs.TaskState{"greeter": {State: structs.TaskStateRunning, Events: []*structs.TaskEvent{
		{Type: structs.TaskReceived, Time: 1, DisplayMessage: "Task received by client"},
		{Type: structs.TaskSetup, Time: 2, DisplayMessage: "Building Task Directory"},
		{Type: structs.TaskStarted, Time: 3, DisplayMessage: "Task started by client"}}}}
	runMaster, _ := allocItems(running, job)
	s := New(nil, Config{Table: "drover"})
	ev := &structs.Evaluation{ID: evalID, Namespace: "default", JobID: job.ID, Priority: 50, Type: "service",
		TriggeredBy: structs.EvalTriggerJobRegister, Status: structs.EvalStatusPending, CreateIndex: 1234, ModifyIndex: 1234, CreateTime: 1, ModifyTime: 1}
	evAct := s.evalActions(ev, nil)
	version := s.versionItem(job)
	nodeItem := key(nodePK(a.NodeID), skMeta)
	node := &structs.Node{ID: a.NodeID, Name: "ip-10-0-1-23", Datacenter: "dc1", NodePool: "default",
		Attributes: map[string]string{"kernel.name": "linux", "os.name": "ubuntu", "cpu.arch": "arm64", "cpu.numcores": "4",
			"cpu.totalcompute": "10000", "memory.totalbytes": "17179869184", "unique.hostname": "ip-10-0-1-23", "driver.raw_exec": "1", "nomad.version": "0.1.0"},
		NodeResources: &structs.NodeResources{Cpu: structs.NodeCpuResources{CpuShares: 10000}, Memory: structs.NodeMemoryResources{MemoryMB: 16000}},
		Drivers:       map[string]*structs.DriverInfo{"raw_exec": {Detected: true, Healthy: true}}, Status: "ready", SchedulingEligibility: "eligible"}
	nodeItem["v"] = avB(encode(node))
	for _, k := range []string{"mi", "ci", "capCpu", "capMem", "capDisk", "useCpu", "useMem", "useDisk", "freeCpu", "freeMem", "freeDisk", "nAllocs"} {
		nodeItem[k] = avN(1234567)
	}
	nodeItem["rdy"], nodeItem["g1pk"], nodeItem["g1sk"] = avBool(true), avS("NODE"), avS(a.NodeID)
	head := key(jobPK("default", job.ID), skMeta)
	for _, k := range []string{"ver", "jmi", "ci", "mi", "pIdx", "nLive", "nOpen"} {
		head[k] = avN(1234)
	}
	head["stp"], head["seen"], head["g1pk"], head["g1sk"] = avBool(false), avBool(true), avS("JOB"), avS("default#"+job.ID)
	idx := key(nodePK(a.NodeID), skIdx)
	idx["idx"] = avN(1240)

	sizes := []struct {
		name string
		n    int
	}{
		{"allocation master (placed)", itemSize(master)},
		{"allocation master (running, 3 task events)", itemSize(runMaster)},
		{"assignment (with the job cut to its group)", itemSize(assign)},
		{"job version", itemSize(version)},
		{"job head", itemSize(head)},
		{"evaluation", evAct[0].size},
		{"eval pointer", evAct[1].size},
		{"node", itemSize(nodeItem)},
		{"node index", itemSize(idx)},
	}
	var b strings.Builder
	b.WriteString("| item | bytes |\n|---|---|\n")
	for _, s := range sizes {
		fmt.Fprintf(&b, "| %s | %d |\n", s.name, s.n)
	}
	// A chunk placing p allocs on one node: p masters + p assignments (new
	// items), the node's counters, its index and the job head: 2 WCU per KB
	// of each item, as a transaction.
	perUnit := (s.cfg.ChunkActions - 3) / 2
	chunk := perUnit*2*(kb(itemSize(master))+kb(itemSize(assign))) + 2*(kb(itemSize(nodeItem))+kb(itemSize(idx))+kb(itemSize(head)))
	// Each new master also writes gsi1 and gsi3 (keys only, ~100 bytes:
	// 1 WCU each, not transactional).
	gsi := perUnit * 2
	per := float64(chunk+gsi) / float64(perUnit)
	fmt.Fprintf(&b, "\nWCU per placed alloc: %.2f (a chunk of %d placements on one node: %d WCU transactional + %d WCU for the two keys-only GSIs).\n", per, perUnit, chunk, gsi)
	t.Log("\n" + b.String())
	if kb(itemSize(master)) > 1 || kb(itemSize(assign)) > 2 {
		t.Fatalf("alloc items larger than expected: master %d, assignment %d bytes", itemSize(master), itemSize(assign))
	}
	if kb(itemSize(idx)) > 1 {
		t.Fatal("the node index must stay under 1 KB (the agent's poll reads it)")
	}
}
