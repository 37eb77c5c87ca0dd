package structs

import (
	"testing"
	"time"
)

func diffTestJob() *Job {
	return &Job{ID: "web", Name: "web", Namespace: "default", Type: JobTypeService, Priority: 50,
		Datacenters: []string{"dc1"}, Meta: map[string]string{"team": "a"},
		TaskGroups: []*TaskGroup{{Name: "web", Count: 2, RestartPolicy: &RestartPolicy{Attempts: 2, Mode: "fail"}, Tasks: []*Task{{Name: "server", Driver: "raw_exec",
			Config: map[string]any{"command": "/bin/sleep", "args": []any{"100"}}, KillTimeout: 5 * time.Second,
			Resources: &Resources{CPU: 100, MemoryMB: 64}}}}}}
}

func findField(fs []*FieldDiff, name string) *FieldDiff {
	for _, f := range fs {
		if f.Name == name {
			return f
		}
	}
	return nil
}

func findObject(os []*ObjectDiff, name string) *ObjectDiff {
	for _, o := range os {
		if o.Name == name {
			return o
		}
	}
	return nil
}

// TestDiffJobs: the diff names each changed field with its old and new
// text and Nomad's type (Added, Deleted, Edited), per job, group, task
// and nested object; server-side fields are not in it; an unchanged job
// is None.
func TestDiffJobs(t *testing.T) {
	cur := diffTestJob()
	if d := DiffJobs(cur, diffTestJob(), false); d.Type != DiffTypeNone || len(d.Fields) != 0 {
		t.Fatalf("same job: %+v", d)
	}
	next := diffTestJob()
	next.Version, next.JobModifyIndex = 7, 99 // server-side: ignored
	next.Priority = 70
	next.Datacenters = []string{"dc1", "dc2"}
	next.Meta = map[string]string{"team": "b", "tier": "web"}
	next.TaskGroups[0].Count = 3
	next.TaskGroups[0].Tasks[0].Config["args"] = []any{"200"}
	next.TaskGroups = append(next.TaskGroups, &TaskGroup{Name: "api", Count: 1, Tasks: []*Task{{Name: "a", Driver: "raw_exec"}}})
	d := DiffJobs(cur, next, false)
	if d.Type != DiffTypeEdited || d.ID != "web" {
		t.Fatalf("type %s id %s", d.Type, d.ID)
	}
	if f := findField(d.Fields, "Priority"); f == nil || f.Type != DiffTypeEdited || f.Old != "50" || f.New != "70" {
		t.Fatalf("priority: %+v", f)
	}
	if f := findField(d.Fields, "Version"); f != nil {
		t.Fatalf("server field in the diff: %+v", f)
	}
	if f := findField(d.Fields, "Meta[team]"); f == nil || f.Type != DiffTypeEdited || f.Old != "a" || f.New != "b" {
		t.Fatalf("meta edited: %+v", f)
	}
	if f := findField(d.Fields, "Meta[tier]"); f == nil || f.Type != DiffTypeAdded || f.New != "web" {
		t.Fatalf("meta added: %+v", f)
	}
	dc := findObject(d.Objects, "Datacenters")
	if dc == nil || dc.Type != DiffTypeEdited || len(dc.Fields) != 1 || dc.Fields[0].Type != DiffTypeAdded || dc.Fields[0].New != "dc2" {
		t.Fatalf("datacenters: %+v", dc)
	}
	if len(d.TaskGroups) != 2 || d.TaskGroups[0].Name != "api" || d.TaskGroups[0].Type != DiffTypeAdded {
		t.Fatalf("groups: %+v", d.TaskGroups)
	}
	web := d.TaskGroups[1]
	if f := findField(web.Fields, "Count"); web.Type != DiffTypeEdited || f == nil || f.Old != "2" || f.New != "3" {
		t.Fatalf("group web: %+v", web)
	}
	task := web.Tasks[0]
	cfg := findObject(task.Objects, "Config")
	if task.Type != DiffTypeEdited || cfg == nil || cfg.Type != DiffTypeEdited {
		t.Fatalf("task config: %+v", task)
	}
	if args := findObject(cfg.Objects, "args"); args == nil || len(changedFields(args.Fields)) != 2 {
		t.Fatalf("args: %+v", args)
	}
	// A contextual diff lists a changed block's unchanged fields, as
	// None; as Nomad's, the job's, groups' and tasks' own unchanged
	// fields and unchanged blocks are left out, and unchanged tasks are
	// listed by name.
	c := DiffJobs(cur, next, true)
	for _, f := range c.Fields {
		if f.Type == DiffTypeNone {
			t.Fatalf("contextual job field %+v: unchanged fields of the job are not listed", f)
		}
	}
	for _, g := range c.TaskGroups {
		for _, f := range g.Fields {
			if f.Type == DiffTypeNone {
				t.Fatalf("contextual group field %+v", f)
			}
		}
		if g.Name == "web" && findObject(g.Objects, "RestartPolicy") != nil {
			t.Fatalf("contextual group: the unchanged restart policy is listed: %+v", g.Objects)
		}
		for _, o := range g.Objects {
			if o.Type == DiffTypeNone {
				t.Fatalf("contextual group block %+v: an unchanged block is left out", o)
			}
		}
		for _, task := range g.Tasks {
			for _, f := range task.Fields {
				if f.Type == DiffTypeNone {
					t.Fatalf("contextual task field %+v", f)
				}
			}
		}
	}
	if cfg := findObject(c.TaskGroups[1].Tasks[0].Objects, "Config"); cfg == nil || findField(cfg.Fields, "command") == nil ||
		findField(cfg.Fields, "command").Type != DiffTypeNone {
		t.Fatalf("contextual config: %+v", cfg)
	}
	if n := DiffJobs(nil, cur, false); n.Type != DiffTypeAdded || n.TaskGroups[0].Type != DiffTypeAdded {
		t.Fatalf("new job: %+v", n)
	}
}

// TestDiffAffinitiesAndSpreads: affinity and spread blocks diff as Nomad
// names them: Affinity and Spread objects, the spread's SpreadTarget
// objects inside.
func TestDiffAffinitiesAndSpreads(t *testing.T) {
	cur := diffTestJob()
	next := diffTestJob()
	next.Affinities = []*Affinity{{LTarget: "${node.class}", Operand: "=", RTarget: "large", Weight: 50}}
	next.TaskGroups[0].Spreads = []*Spread{{Attribute: "${node.datacenter}", Weight: 100,
		SpreadTarget: []*SpreadTarget{{Value: "dc1", Percent: 70}}}}
	d := DiffJobs(cur, next, false)
	a := findObject(d.Objects, "Affinity")
	if a == nil || a.Type != DiffTypeAdded || findField(a.Fields, "Weight").New != "50" || findField(a.Fields, "RTarget").New != "large" {
		t.Fatalf("affinity diff: %+v", d.Objects)
	}
	s := findObject(d.TaskGroups[0].Objects, "Spread")
	if s == nil || s.Type != DiffTypeAdded || findField(s.Fields, "Attribute").New != "${node.datacenter}" {
		t.Fatalf("spread diff: %+v", d.TaskGroups[0].Objects)
	}
	if st := findObject(s.Objects, "SpreadTarget"); st == nil || findField(st.Fields, "Percent").New != "70" {
		t.Fatalf("spread target diff: %+v", s.Objects)
	}
}
