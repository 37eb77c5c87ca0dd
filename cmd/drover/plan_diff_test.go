package main

import "github.com/hashicorp/nomad/api"

// sampleDiff is a job diff as the plan route answers it.
func sampleDiff() *api.JobDiff {
	return &api.JobDiff{Type: "Edited", ID: "web",
		Fields: []*api.FieldDiff{{Type: "Edited", Name: "Priority", Old: "50", New: "60"}, {Type: "Added", Name: "Meta[a]", New: "1"}},
		TaskGroups: []*api.TaskGroupDiff{{Type: "Edited", Name: "web", Updates: map[string]uint64{"create": 1, "destroy": 1},
			Fields: []*api.FieldDiff{{Type: "Edited", Name: "Count", Old: "1", New: "2", Annotations: []string{"forces create"}}},
			Tasks: []*api.TaskDiff{{Type: "Edited", Name: "server", Annotations: []string{"forces create/destroy update"},
				Objects: []*api.ObjectDiff{{Type: "Edited", Name: "Config",
					Fields: []*api.FieldDiff{{Type: "Edited", Name: "args[0]", Old: "1", New: "2"}}}}}}}}}
}
