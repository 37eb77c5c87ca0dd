package nodeagent

import (
	"strings"
	"testing"

	"github.com/drover-sched/drover/structs"
)

func TestParseHostVolume(t *testing.T) {
	for in, want := range map[string]structs.ClientHostVolumeConfig{
		"data=/srv/data":    {Name: "data", Path: "/srv/data"},
		"logs=/var/log/:ro": {Name: "logs", Path: "/var/log", ReadOnly: true},
		"x=/a/b:rw":         {Name: "x", Path: "/a/b"},
	} {
		got, err := ParseHostVolume(in)
		if err != nil || *got != want {
			t.Errorf("%s: %+v %v", in, got, err)
		}
	}
	for _, bad := range []string{"data", "=/x", "data=", "data=relative/path"} {
		if _, err := ParseHostVolume(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if err := checkHostVolumes(map[string]*structs.ClientHostVolumeConfig{"gone": {Name: "gone", Path: "/no/such/dir"}}); err == nil || !strings.Contains(err.Error(), `"gone"`) {
		t.Errorf("missing path: %v", err)
	}
}

// TestHostVolumeMounts: a task's mounts come from its group's volume and
// the node's host volume; read-only when any of the three says so; a
// volume the node lost fails the setup naming it.
func TestHostVolumeMounts(t *testing.T) {
	task := &structs.Task{Name: "t", VolumeMounts: []*structs.VolumeMount{
		{Volume: "a", Destination: "/a"}, {Volume: "b", Destination: "/b", ReadOnly: true}, {Volume: "c", Destination: "/c"},
	}}
	job := testJob(structs.JobTypeBatch, task)
	job.TaskGroups[0].Volumes = map[string]*structs.VolumeRequest{
		"a": {Name: "a", Type: "host", Source: "rw"}, "b": {Name: "b", Type: "host", Source: "rw"},
		"c": {Name: "c", Type: "host", Source: "ro"},
	}
	node := &structs.Node{HostVolumes: map[string]*structs.ClientHostVolumeConfig{
		"rw": {Name: "rw", Path: "/srv/rw"}, "ro": {Name: "ro", Path: "/srv/ro", ReadOnly: true}}}
	mounts, err := hostVolumeMounts(testAlloc(job), task, node)
	if err != nil || len(mounts) != 3 {
		t.Fatalf("%+v %v", mounts, err)
	}
	if mounts[0].ReadOnly || !mounts[1].ReadOnly || !mounts[2].ReadOnly || mounts[2].HostPath != "/srv/ro" || mounts[0].TaskPath != "/a" {
		t.Fatalf("mounts %+v", mounts)
	}
	delete(node.HostVolumes, "ro")
	if _, err := hostVolumeMounts(testAlloc(job), task, node); err == nil || !strings.Contains(err.Error(), "missing ro") {
		t.Fatalf("lost volume: %v", err)
	}
}
