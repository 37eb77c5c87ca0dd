package placement

import (
	"testing"
	"time"

	"github.com/drover-sched/drover/reconcile"
	"github.com/drover-sched/drover/structs"
)

var _ reconcile.UpdateFunc = UpdateType

// updateTestJob is version 1 of a one-group, two-task job with every field
// UpdateType looks at set.
func updateTestJob() *structs.Job {
	return &structs.Job{
		ID: "web", Namespace: "default", Type: structs.JobTypeService, Version: 1, CreateIndex: 10,
		Datacenters: []string{"dc1"}, NodePool: "default", Priority: 50,
		Constraints: []*structs.Constraint{{LTarget: "${attr.kernel.name}", RTarget: "linux", Operand: "="}},
		Meta:        map[string]string{"team": "a"},
		TaskGroups: []*structs.TaskGroup{{
			Name: "web", Count: 3,
			Constraints:      []*structs.Constraint{{LTarget: "${attr.cpu.arch}", RTarget: "amd64", Operand: "="}},
			RestartPolicy:    &structs.RestartPolicy{Attempts: 2, Interval: time.Minute, Delay: time.Second, Mode: "fail"},
			ReschedulePolicy: &structs.ReschedulePolicy{Delay: 30 * time.Second, DelayFunction: "exponential", Unlimited: true},
			EphemeralDisk:    &structs.EphemeralDisk{SizeMB: 300},
			Update:           &structs.UpdateStrategy{MaxParallel: 1},
			Migrate:          &structs.MigrateStrategy{MaxParallel: 1},
			Meta:             map[string]string{"tier": "front"},
			Tasks: []*structs.Task{
				{
					Name: "main", Driver: "raw_exec", User: "nobody",
					Config:      map[string]any{"command": "/bin/sleep", "args": []any{"60"}},
					Env:         map[string]string{"A": "1"},
					Resources:   &structs.Resources{CPU: 100, MemoryMB: 64},
					Meta:        map[string]string{"role": "server"},
					KillTimeout: 5 * time.Second, KillSignal: "SIGINT",
					LogConfig: &structs.LogConfig{MaxFiles: 10, MaxFileSizeMB: 10},
				},
				{
					Name: "side", Driver: "raw_exec",
					Config:    map[string]any{"command": "/bin/true"},
					Resources: &structs.Resources{CPU: 50, MemoryMB: 32},
					Lifecycle: &structs.TaskLifecycle{Hook: "prestart", Sidecar: true},
				},
			},
		}},
	}
}

func TestUpdateType(t *testing.T) {
	destructive, inplace, ignore := reconcile.UpdateDestructive, reconcile.UpdateInPlace, reconcile.UpdateIgnore
	cases := []struct {
		name   string
		change func(j *structs.Job)
		alloc  func(a *structs.Allocation)
		want   reconcile.UpdateKind
	}{
		{name: "same version", change: func(j *structs.Job) { j.Version = 1; j.TaskGroups[0].Tasks[0].Driver = "exec" }, want: ignore},
		{name: "nothing changed but version", want: inplace},
		// A job registered under the ID of a purged job of another type
		// (found by the chaos suite: seed 1657 with system jobs, a purged
		// system job's allocs, one g[0] per node, were updated in place
		// into the service job and kept their one name).
		{name: "job type", change: func(j *structs.Job) { j.Type = structs.JobTypeSystem }, want: destructive},
		{name: "count", change: func(j *structs.Job) { j.TaskGroups[0].Count = 9 }, want: inplace},
		{name: "update strategy", change: func(j *structs.Job) { j.TaskGroups[0].Update.MaxParallel = 4 }, want: inplace},
		{name: "migrate strategy", change: func(j *structs.Job) { j.TaskGroups[0].Migrate.MaxParallel = 4 }, want: inplace},
		{name: "reschedule policy", change: func(j *structs.Job) { j.TaskGroups[0].ReschedulePolicy.Delay = time.Minute }, want: inplace},
		{name: "restart attempts", change: func(j *structs.Job) { j.TaskGroups[0].RestartPolicy.Attempts = 5 }, want: inplace},
		{name: "kill timeout", change: func(j *structs.Job) { j.TaskGroups[0].Tasks[0].KillTimeout = time.Minute }, want: inplace},
		{name: "kill signal", change: func(j *structs.Job) { j.TaskGroups[0].Tasks[0].KillSignal = "SIGTERM" }, want: inplace},
		{name: "shutdown delay", change: func(j *structs.Job) { j.TaskGroups[0].Tasks[0].ShutdownDelay = time.Second }, want: inplace},
		{name: "leader", change: func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Leader = true }, want: inplace},
		{name: "log file limits", change: func(j *structs.Job) { j.TaskGroups[0].Tasks[0].LogConfig.MaxFiles = 3 }, want: inplace},
		{name: "priority", change: func(j *structs.Job) { j.Priority = 70 }, want: inplace},
		{name: "max client disconnect", change: func(j *structs.Job) { d := time.Minute; j.TaskGroups[0].MaxClientDisconnect = &d }, want: inplace},
		{name: "driver", change: func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Driver = "exec" }, want: destructive},
		// Placement preferences, as Nomad's tasksUpdated (affinitiesUpdated,
		// spreadsUpdated).
		{name: "job affinity", change: func(j *structs.Job) {
			j.Affinities = []*structs.Affinity{{LTarget: "${node.class}", Operand: "=", RTarget: "large", Weight: 50}}
		}, want: destructive},
		{name: "task affinity", change: func(j *structs.Job) {
			j.TaskGroups[0].Tasks[1].Affinities = []*structs.Affinity{{LTarget: "${node.class}", Operand: "=", RTarget: "large", Weight: -50}}
		}, want: destructive},
		{name: "group spread", change: func(j *structs.Job) {
			j.TaskGroups[0].Spreads = []*structs.Spread{{Attribute: "${node.datacenter}", Weight: 50}}
		}, want: destructive},
		{name: "job spread", change: func(j *structs.Job) {
			j.Spreads = []*structs.Spread{{Attribute: "${node.datacenter}", Weight: 50}}
		}, want: destructive},
		{name: "empty affinity list", change: func(j *structs.Job) { j.Affinities = []*structs.Affinity{} }, want: inplace},
		{name: "template data", change: func(j *structs.Job) {
			j.TaskGroups[0].Tasks[0].Templates = []*structs.Template{{DestPath: "local/x", EmbeddedTmpl: "v2"}}
		}, want: destructive},
		{name: "artifact", change: func(j *structs.Job) {
			j.TaskGroups[0].Tasks[0].Artifacts = []*structs.TaskArtifact{{GetterSource: "http://127.0.0.1/x"}}
		}, want: destructive},
		{name: "volume mount", change: func(j *structs.Job) {
			j.TaskGroups[0].Tasks[0].VolumeMounts = []*structs.VolumeMount{{Volume: "d", Destination: "/d"}}
		}, want: destructive},
		{name: "group service", change: func(j *structs.Job) {
			j.TaskGroups[0].Services = []*structs.Service{{Name: "web", Provider: structs.ServiceProviderNomad}}
		}, want: inplace},
		{name: "task service tags", change: func(j *structs.Job) {
			j.TaskGroups[0].Tasks[0].Services = []*structs.Service{{Name: "web", Tags: []string{"v2"}}}
		}, want: inplace},
		{name: "group volume", change: func(j *structs.Job) {
			j.TaskGroups[0].Volumes = map[string]*structs.VolumeRequest{"d": {Name: "d", Type: "host", Source: "d"}}
		}, want: destructive},
		{name: "scaling bounds", change: func(j *structs.Job) { j.TaskGroups[0].Scaling = &structs.ScalingPolicy{Min: 1, Max: 9} }, want: inplace},
		{name: "job name", change: func(j *structs.Job) { j.Name = "renamed" }, want: inplace},
		{name: "user", change: func(j *structs.Job) { j.TaskGroups[0].Tasks[0].User = "root" }, want: destructive},
		{name: "config value", change: func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Config["command"] = "/bin/cat" }, want: destructive},
		{name: "config nested", change: func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Config["args"] = []any{"61"} }, want: destructive},
		{name: "env", change: func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Env["A"] = "2" }, want: destructive},
		{name: "env added", change: func(j *structs.Job) { j.TaskGroups[0].Tasks[1].Env = map[string]string{"B": "1"} }, want: destructive},
		{name: "cpu", change: func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Resources.CPU = 200 }, want: destructive},
		{name: "memory", change: func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Resources.MemoryMB = 128 }, want: destructive},
		{name: "memory max", change: func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Resources.MemoryMaxMB = 256 }, want: destructive},
		{name: "cores", change: func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Resources.Cores = 1 }, want: destructive},
		{name: "lifecycle", change: func(j *structs.Job) { j.TaskGroups[0].Tasks[1].Lifecycle = nil }, want: destructive},
		{name: "logs disabled", change: func(j *structs.Job) { j.TaskGroups[0].Tasks[0].LogConfig.Disabled = true }, want: destructive},
		{name: "task meta", change: func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Meta["role"] = "worker" }, want: destructive},
		{name: "group meta", change: func(j *structs.Job) { j.TaskGroups[0].Meta["tier"] = "back" }, want: destructive},
		{name: "job meta", change: func(j *structs.Job) { j.Meta["team"] = "b" }, want: destructive},
		{name: "meta moved between levels", change: func(j *structs.Job) {
			delete(j.TaskGroups[0].Meta, "tier")
			j.Meta["tier"] = "front"
		}, want: inplace},
		{name: "job constraint", change: func(j *structs.Job) { j.Constraints[0].RTarget = "darwin" }, want: destructive},
		{name: "group constraint", change: func(j *structs.Job) { j.TaskGroups[0].Constraints = nil }, want: destructive},
		{name: "task constraint", change: func(j *structs.Job) {
			j.TaskGroups[0].Tasks[0].Constraints = []*structs.Constraint{{LTarget: "${node.class}", RTarget: "x", Operand: "="}}
		}, want: destructive},
		{name: "datacenters", change: func(j *structs.Job) { j.Datacenters = []string{"dc2"} }, want: destructive},
		{name: "node pool", change: func(j *structs.Job) { j.NodePool = "gpu" }, want: destructive},
		{name: "ephemeral disk size", change: func(j *structs.Job) { j.TaskGroups[0].EphemeralDisk.SizeMB = 500 }, want: destructive},
		{name: "ephemeral disk sticky", change: func(j *structs.Job) { j.TaskGroups[0].EphemeralDisk.Sticky = true }, want: destructive},
		{name: "render templates", change: func(j *structs.Job) { j.TaskGroups[0].RestartPolicy.RenderTemplates = true }, want: destructive},
		{name: "task added", change: func(j *structs.Job) {
			j.TaskGroups[0].Tasks = append(j.TaskGroups[0].Tasks, &structs.Task{Name: "extra", Driver: "raw_exec"})
		}, want: destructive},
		{name: "task renamed", change: func(j *structs.Job) { j.TaskGroups[0].Tasks[1].Name = "other" }, want: destructive},
		{name: "new incarnation same version", change: func(j *structs.Job) { j.Version = 1; j.CreateIndex = 99 }, want: inplace},
		{name: "terminal alloc, in-place change", change: func(j *structs.Job) { j.TaskGroups[0].Count = 9 },
			alloc: func(a *structs.Allocation) { a.ClientStatus = structs.AllocClientStatusComplete }, want: ignore},
		{name: "terminal alloc, destructive change", change: func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Driver = "exec" },
			alloc: func(a *structs.Allocation) { a.ClientStatus = structs.AllocClientStatusComplete }, want: destructive},
		{name: "alloc without its job, same version", change: func(j *structs.Job) { j.Version = 1 },
			alloc: func(a *structs.Allocation) { a.Job = nil }, want: ignore},
		{name: "alloc without its job, new version",
			alloc: func(a *structs.Allocation) { a.Job = nil }, want: destructive},
		{name: "group missing from the alloc's job",
			alloc: func(a *structs.Allocation) { a.Job = &structs.Job{ID: "web", Version: 1, CreateIndex: 10} }, want: destructive},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := updateTestJob()
			newJob := old.Copy()
			newJob.Version = 2
			if tc.change != nil {
				tc.change(newJob)
			}
			a := &structs.Allocation{
				ID: "a1", Name: "web.web[0]", JobID: "web", Job: old, JobVersion: old.Version, TaskGroup: "web",
				DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusRunning,
			}
			if tc.alloc != nil {
				tc.alloc(a)
			}
			kind, updated := UpdateType(a, newJob, newJob.TaskGroups[0])
			if kind != tc.want {
				t.Fatalf("kind = %v, want %v", kind, tc.want)
			}
			if kind != reconcile.UpdateInPlace {
				if updated != nil {
					t.Fatalf("updated alloc for %v", kind)
				}
				return
			}
			if updated == nil || updated == a || updated.Job != newJob || updated.JobVersion != newJob.Version {
				t.Fatalf("in-place alloc not moved to the new version: %+v", updated)
			}
			if a.Job != old || a.JobVersion != old.Version {
				t.Fatal("the existing alloc was modified")
			}
		})
	}
}

func TestUpdateTypeOnNodesKeepsAllocsWhoseNodeStillFits(t *testing.T) {
	node := &structs.Node{ID: "n1", Datacenter: "dc1", NodePool: "default", Attributes: map[string]string{"kernel.name": "linux"},
		Drivers: map[string]*structs.DriverInfo{"raw_exec": {Detected: true, Healthy: true}}}
	mk := func(version uint64, constraint string) *structs.Job {
		return &structs.Job{ID: "j", Version: version, NodePool: "default",
			Constraints: []*structs.Constraint{{LTarget: "${attr.kernel.name}", Operand: "=", RTarget: constraint}},
			TaskGroups:  []*structs.TaskGroup{{Name: "g", Count: 1, Tasks: []*structs.Task{{Name: "t", Driver: "raw_exec"}}}}}
	}
	old := mk(0, "linux")
	alloc := &structs.Allocation{ID: "a", NodeID: "n1", TaskGroup: "g", Job: old, JobVersion: 0,
		DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusRunning}
	fn := UpdateTypeOnNodes(map[string]*structs.Node{"n1": node})

	stillFits := mk(1, "linux")
	stillFits.Constraints = append(stillFits.Constraints, &structs.Constraint{LTarget: "${node.datacenter}", Operand: "=", RTarget: "dc1"})
	if kind, updated := fn(alloc, stillFits, stillFits.TaskGroups[0]); kind != reconcile.UpdateInPlace || updated.JobVersion != 1 {
		t.Fatalf("constraint the node still meets: %s", kind)
	}
	if kind, _ := UpdateType(alloc, stillFits, stillFits.TaskGroups[0]); kind != reconcile.UpdateDestructive {
		t.Fatalf("without nodes a constraint change replaces: %s", kind)
	}
	noLonger := mk(1, "windows")
	if kind, _ := fn(alloc, noLonger, noLonger.TaskGroups[0]); kind != reconcile.UpdateDestructive {
		t.Fatalf("constraint the node no longer meets: %s", kind)
	}
	moved := mk(1, "linux")
	moved.Datacenters = []string{"dc2"}
	if kind, _ := fn(alloc, moved, moved.TaskGroups[0]); kind != reconcile.UpdateDestructive {
		t.Fatalf("datacenter the node is not in: %s", kind)
	}
	gone := UpdateTypeOnNodes(map[string]*structs.Node{})
	if kind, _ := gone(alloc, stillFits, stillFits.TaskGroups[0]); kind != reconcile.UpdateDestructive {
		t.Fatalf("alloc on an unknown node: %s", kind)
	}
	runtime := mk(1, "linux")
	runtime.TaskGroups[0].Tasks[0].Env = map[string]string{"X": "1"}
	if kind, _ := fn(alloc, runtime, runtime.TaskGroups[0]); kind != reconcile.UpdateDestructive {
		t.Fatalf("env change: %s", kind)
	}
}
