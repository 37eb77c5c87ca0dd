package placement

import (
	"testing"

	"github.com/drover-sched/drover/structs"
)

// TestHostVolumeFeasibility: a group with a host volume goes only to nodes
// offering it; a node's read-only volume only takes read-only requests;
// the others are filtered with Nomad's reason.
func TestHostVolumeFeasibility(t *testing.T) {
	rw, ro, none := node("rw", 1000, 4096, nil), node("ro", 1000, 4096, nil), node("none", 1000, 4096, nil)
	rw.HostVolumes = map[string]*structs.ClientHostVolumeConfig{"data": {Name: "data", Path: "/srv/data"}}
	ro.HostVolumes = map[string]*structs.ClientHostVolumeConfig{"data": {Name: "data", Path: "/srv/data", ReadOnly: true}}
	for _, c := range []struct {
		readOnly bool
		want     map[string]bool
		filtered int
	}{
		{readOnly: false, want: map[string]bool{"rw": true}, filtered: 2},
		{readOnly: true, want: map[string]bool{"rw": true, "ro": true}, filtered: 1},
	} {
		j := job(1, 100, 100)
		j.TaskGroups[0].Volumes = map[string]*structs.VolumeRequest{"d": {Name: "d", Type: structs.VolumeTypeHost, Source: "data", ReadOnly: c.readOnly}}
		got := map[string]bool{}
		for i := 0; i < 20; i++ {
			p := NewPlacer(j, cands(rw, ro, none), nil, Options{EvalID: structs.GenerateUUID(), Exhaustive: true})
			n, m := p.Place(j.TaskGroups[0], "", nil)
			if n == nil {
				t.Fatalf("read_only=%v: not placed: %+v", c.readOnly, m)
			}
			got[n.ID] = true
			if m.ConstraintFiltered[reasonMissingHostVolumes] != c.filtered {
				t.Fatalf("read_only=%v: filtered %v", c.readOnly, m.ConstraintFiltered)
			}
		}
		for id := range got {
			if !c.want[id] {
				t.Errorf("read_only=%v: placed on %s", c.readOnly, id)
			}
		}
	}
}
