package embedded

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// fill sets every field reachable from v to a non-zero value (one entry
// per map and slice), so a round trip shows any field the encoding loses.
func fill(v reflect.Value, seed *int) {
	*seed++
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d", *seed))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(*seed) * 1_000_003)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(*seed) * 1_000_003)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(*seed) / 7)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), seed)
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0), seed)
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, seed)
		fill(e, seed)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, 5, *seed, time.UTC)))
			return
		}
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), seed)
			}
		}
	}
}

// TestAllocEncodingKeepsEveryField: the stored form of an alloc keeps
// every field except Job (filled from the job version on read), also
// fields added later.
func TestAllocEncodingKeepsEveryField(t *testing.T) {
	in := &structs.Allocation{}
	seed := 0
	fill(reflect.ValueOf(in).Elem(), &seed)
	data, err := encodeAlloc(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := decodeAlloc(data)
	if err != nil {
		t.Fatal(err)
	}
	if out.Job != nil {
		t.Fatal("the job was stored with the alloc")
	}
	in.Job = nil
	// Nomad's legacy resource fields are filled by the API on read and
	// never stored.
	if out.Resources != nil || out.TaskResources != nil {
		t.Fatal("the legacy resources were stored with the alloc")
	}
	in.Resources, in.TaskResources = nil, nil
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip changed the alloc:\n in  %+v\n out %+v", in, out)
	}
	// An alloc written as JSON by an earlier drover still reads.
	legacy := []byte(`{"ID":"a1","Name":"web.g[0]","NodeID":"n1","ClientStatus":"running","AllocatedResources":{"Tasks":{"t":{"Cpu":{"CpuShares":100}}}}}`)
	old, err := decodeAlloc(legacy)
	if err != nil || old.ID != "a1" || old.ClientStatus != "running" || old.AllocatedResources.Comparable().CPU != 100 {
		t.Fatalf("JSON alloc: %+v %v", old, err)
	}
}

// benchAlloc is an alloc as the placer makes it for a one-task group:
// resources, and metrics with the top five node scores.
func benchAlloc(job *structs.Job, evalID string, i int, node string) *structs.Allocation {
	tg := job.TaskGroups[0]
	name := structs.AllocName(job.ID, tg.Name, uint(i))
	m := &structs.AllocMetric{NodesEvaluated: 1000, NodesInPool: 1000, NodePool: "default", NodesAvailable: map[string]int{"dc1": 1000}}
	for k := 0; k < 5; k++ {
		s := 0.12345678901234 + float64(k)/1000
		m.ScoreMetaData = append(m.ScoreMetaData, &structs.NodeScoreMeta{NodeID: fmt.Sprintf("node-%04d", (i+k)%1000),
			Scores: map[string]float64{"binpack": s, "job-anti-affinity": -0.004}, NormScore: s / 2})
	}
	m.AllocationTime = 123456 * time.Nanosecond
	return &structs.Allocation{
		ID: structs.AllocIDForPlacement(evalID, name, false, ""), Namespace: job.Namespace, EvalID: evalID, Name: name,
		NodeID: node, NodeName: node, JobID: job.ID, JobVersion: job.Version, TaskGroup: tg.Name,
		AllocatedResources: structs.AllocatedResourcesFor(tg), Metrics: m,
		DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusPending,
		CreateTime: time.Now().UnixNano(), ModifyTime: time.Now().UnixNano(),
	}
}

// compactedSize returns the size of a compacted copy of the store's file.
func compactedSize(t *testing.T, s *Store) int64 {
	t.Helper()
	path := filepath.Join(t.TempDir(), "compact.db")
	dst, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := bolt.Compact(dst, s.db, 64<<20); err != nil {
		t.Fatal(err)
	}
	dst.Close()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestBytesPerAlloc: an alloc as placed costs at most 2 KB of the state
// file (its record and its three index entries, B+tree pages included),
// measured as the growth of the compacted file per alloc (issue 10 §4).
func TestBytesPerAlloc(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "state.db"))
	defer s.Close()
	ctx := context.Background()
	const nodes, jobs, count = 100, 4, 1000
	for i := 0; i < nodes; i++ {
		id := fmt.Sprintf("node-%04d", i)
		if _, err := s.UpsertNode(ctx, &structs.Node{ID: id, Name: id, Status: structs.NodeStatusReady,
			NodeResources: &structs.NodeResources{Cpu: structs.NodeCpuResources{CpuShares: 1 << 40},
				Memory: structs.NodeMemoryResources{MemoryMB: 1 << 40}, Disk: structs.NodeDiskResources{DiskMB: 1 << 40}}}); err != nil {
			t.Fatal(err)
		}
	}
	var regs []*structs.Job
	for j := 0; j < jobs; j++ {
		job := &structs.Job{Namespace: "default", ID: fmt.Sprintf("bench-%d", j), Type: structs.JobTypeService,
			TaskGroups: []*structs.TaskGroup{{Name: "web", Count: count, EphemeralDisk: &structs.EphemeralDisk{SizeMB: 100},
				Tasks: []*structs.Task{{Name: "server", Driver: "raw_exec", Resources: &structs.Resources{CPU: 100, MemoryMB: 64}}}}}}
		res, err := s.RegisterJob(ctx, &storage.RegisterJobRequest{Job: job, Eval: &structs.Evaluation{ID: structs.GenerateUUID(), Namespace: "default", JobID: job.ID}})
		if err != nil {
			t.Fatal(err)
		}
		regs = append(regs, res.Job)
	}
	before := compactedSize(t, s)
	for _, job := range regs {
		evalID := structs.GenerateUUID()
		plan := &structs.Plan{EvalID: evalID, Namespace: "default", JobID: job.ID, JobModifyIndex: job.JobModifyIndex}
		for i := 0; i < count; i++ {
			plan.Placements = append(plan.Placements, benchAlloc(job, evalID, i, fmt.Sprintf("node-%04d", i%nodes)))
		}
		if _, err := s.CommitPlan(ctx, plan); err != nil {
			t.Fatal(err)
		}
	}
	perAlloc := float64(compactedSize(t, s)-before) / (jobs * count)
	t.Logf("%.0f bytes of compacted state file per alloc", perAlloc)
	if perAlloc > 2048 {
		t.Fatalf("an alloc costs %.0f bytes of state file, more than 2 KB", perAlloc)
	}
}

// BenchmarkDecodeAlloc compares decoding a placed alloc from its stored
// CBOR form with decoding the JSON form earlier drovers stored.
func BenchmarkDecodeAlloc(b *testing.B) {
	job := &structs.Job{Namespace: "default", ID: "bench", TaskGroups: []*structs.TaskGroup{{Name: "web",
		EphemeralDisk: &structs.EphemeralDisk{SizeMB: 100},
		Tasks:         []*structs.Task{{Name: "server", Resources: &structs.Resources{CPU: 100, MemoryMB: 64}}}}}}
	a := benchAlloc(job, "eval", 7, "node-0007")
	cborData, err := encodeAlloc(a)
	if err != nil {
		b.Fatal(err)
	}
	jsonData, err := json.Marshal(a)
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		data []byte
	}{{"cbor", cborData}, {"json", jsonData}} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(tc.data)))
			for i := 0; i < b.N; i++ {
				if _, err := decodeAlloc(tc.data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestWithIndexes: an alloc encoded without its indexes, then stamped,
// reads as the alloc with them, whatever size the map header or the index
// takes.
func TestWithIndexes(t *testing.T) {
	full := &structs.Allocation{}
	seed := 0
	fill(reflect.ValueOf(full).Elem(), &seed)
	full.Job = nil
	full.Resources, full.TaskResources = nil, nil // API-only, never stored
	small := &structs.Allocation{ID: "a1", NodeID: "n1"}
	for _, in := range []*structs.Allocation{full, small} {
		for _, idx := range []uint64{2, 23, 24, 255, 256, 70000, 1 << 33} {
			a := in.Copy()
			a.CreateIndex, a.ModifyIndex, a.AllocModifyIndex = 0, 0, 0
			body, err := encodeAlloc(a)
			if err != nil {
				t.Fatal(err)
			}
			data, err := withIndexes(body, idx)
			if err != nil {
				t.Fatal(err)
			}
			got, err := decodeAlloc(data)
			if err != nil {
				t.Fatal(err)
			}
			a.CreateIndex, a.ModifyIndex, a.AllocModifyIndex = idx, idx, idx
			if !reflect.DeepEqual(a, got) {
				t.Fatalf("index %d: stamped alloc reads as %+v, want %+v", idx, got, a)
			}
		}
	}
}
