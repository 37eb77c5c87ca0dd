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
	// Indexes as the hybrid clock issues them: unix microseconds.
	const at = 1754000000123456
	job.Version, job.JobModifyIndex, job.CreateIndex, job.ModifyIndex = 3, at, at-1000, at
	tg := job.TaskGroups[0]
	evalID := structs.GenerateUUID()
	name := structs.AllocName(job.ID, tg.Name, 7)
	a := &structs.Allocation{ID: structs.AllocIDForPlacement(evalID, name, false, ""), Namespace: job.Namespace, EvalID: evalID,
		Name: name, NodeID: structs.GenerateUUID(), NodeName: "ip-10-0-1-23", JobID: job.ID, JobVersion: job.Version, TaskGroup: tg.Name,
		AllocatedResources: structs.AllocatedResourcesFor(tg), DesiredStatus: structs.AllocDesiredStatusRun,
		ClientStatus: structs.AllocClientStatusPending, CreateIndex: at + 6, ModifyIndex: at + 6, AllocModifyIndex: at + 6,
		CreateTime: 1700000000000000000, ModifyTime: 1700000000000000000,
		Metrics: &structs.AllocMetric{NodesEvaluated: 10, NodesInPool: 10, NodePool: "default", NodesAvailable: map[string]int{"dc1": 10},
			ScoreMetaData: []*structs.NodeScoreMeta{{NodeID: structs.GenerateUUID(), Scores: map[string]float64{"binpack": 0.3}, NormScore: 0.3}}}}
	master, assign := allocItems(a)
	jobCopy := jobCopyItem(a.NodeID, job, tg.Name, at+6)
	running := a.Copy()
	running.ClientStatus = structs.AllocClientStatusRunning
	running.TaskStates = map[string]*structs.TaskState{"greeter": {State: structs.TaskStateRunning, Events: []*structs.TaskEvent{
		{Type: structs.TaskReceived, Time: 1, DisplayMessage: "Task received by client"},
		{Type: structs.TaskSetup, Time: 2, DisplayMessage: "Building Task Directory"},
		{Type: structs.TaskStarted, Time: 3, DisplayMessage: "Task started by client"}}}}
	runMaster := masterItem(running)
	s := New(nil, Config{Table: "drover"})
	ev := &structs.Evaluation{ID: evalID, Namespace: "default", JobID: job.ID, Priority: 50, Type: "service",
		TriggeredBy: structs.EvalTriggerJobRegister, Status: structs.EvalStatusPending, CreateIndex: at, ModifyIndex: at, CreateTime: 1, ModifyTime: 1}
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
		nodeItem[k] = avN(at)
	}
	nodeItem["rdy"], nodeItem["g1pk"], nodeItem["g1sk"] = avBool(true), avS("NODE"), avS(a.NodeID)
	head := key(jobPK("default", job.ID), skMeta)
	for _, k := range []string{"ver", "jmi", "ci", "mi", "pIdx", "nLive", "nOpen"} {
		head[k] = avN(at)
	}
	head["stp"], head["seen"], head["g1pk"], head["g1sk"] = avBool(false), avBool(true), avS("JOB"), avS("default#"+job.ID)
	idx := key(nodePK(a.NodeID), skIdx)
	idx["idx"], idx["chg"] = avN(1754000000123456), avN(12)

	sizes := []struct {
		name string
		n    int
	}{
		{"allocation master (placed)", itemSize(master)},
		{"allocation master (running, 3 task events)", itemSize(runMaster)},
		{"assignment (the alloc without metrics; its job in the node's copy)", itemSize(assign)},
		{"node's job copy (the version cut to the group; once per node, version and group)", itemSize(jobCopy)},
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
	// items), the node's job copy, its counters, its index and the job
	// head: 2 WCU per KB of each item, as a transaction.
	perUnit := (s.cfg.ChunkActions - 4) / 2
	chunk := perUnit*2*(kb(itemSize(master))+kb(itemSize(assign))) + 2*(kb(itemSize(jobCopy))+kb(itemSize(nodeItem))+kb(itemSize(idx))+kb(itemSize(head)))
	// Each new master also writes its keys-only gsi1 entry (~100 bytes:
	// 1 WCU, not transactional).
	gsi := perUnit
	per := float64(chunk+gsi) / float64(perUnit)
	fmt.Fprintf(&b, "\nWCU per placed alloc: %.2f (a chunk of %d placements on one node: %d WCU transactional + %d WCU for the keys-only gsi1 entries).\n", per, perUnit, chunk, gsi)
	fmt.Fprintf(&b, "First status report (running, task events): %d WCU per alloc (an UpdateItem of the master alone).\n", kb(itemSize(runMaster)))
	t.Log("\n" + b.String())
	if kb(itemSize(master)) > 1 || kb(itemSize(runMaster)) > 1 || kb(itemSize(assign)) > 1 {
		t.Fatalf("alloc items larger than 1 KB: master %d (running %d), assignment %d bytes", itemSize(master), itemSize(runMaster), itemSize(assign))
	}
	if kb(itemSize(idx)) > 1 {
		t.Fatal("the node index must stay under 1 KB (the agent's poll reads it)")
	}
}
