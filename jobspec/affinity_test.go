package jobspec

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-sched/drover/structs"
)

// TestAffinitiesAndSpreadsConvert: affinity and spread blocks in Nomad's
// JSON at job, group and task level reach drover's job, weights defaulting
// to 50 as Nomad's Canonicalize, and read back in Nomad's API shape.
func TestAffinitiesAndSpreadsConvert(t *testing.T) {
	m := baseBody(t, minimalService)
	jobOf(m)["Affinities"] = list(obj{"LTarget": "${node.class}", "Operand": "=", "RTarget": "large", "Weight": 80})
	jobOf(m)["Spreads"] = list(obj{"Attribute": "${node.datacenter}", "Weight": 100,
		"SpreadTarget": list(obj{"Value": "dc1", "Percent": 70}, obj{"Value": "dc2", "Percent": 30})})
	grp(m, 0)["Affinities"] = list(obj{"LTarget": "${meta.rack}", "Operand": "!=", "RTarget": "r9"})
	grp(m, 0)["Spreads"] = list(obj{"Attribute": "${meta.rack}"})
	tsk(m, 0, 0)["Affinities"] = list(obj{"LTarget": "${attr.kernel.version}", "Operand": "version", "RTarget": ">= 5.0", "Weight": -30})
	b, _ := json.Marshal(m)
	req, err := DecodeRegisterRequest(strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	j := req.Job
	want := []*structs.Affinity{{LTarget: "${node.class}", Operand: "=", RTarget: "large", Weight: 80}}
	if !reflect.DeepEqual(j.Affinities, want) {
		t.Fatalf("job affinities %v", j.Affinities)
	}
	wantSpread := []*structs.Spread{{Attribute: "${node.datacenter}", Weight: 100,
		SpreadTarget: []*structs.SpreadTarget{{Value: "dc1", Percent: 70}, {Value: "dc2", Percent: 30}}}}
	if !reflect.DeepEqual(j.Spreads, wantSpread) {
		t.Fatalf("job spreads %+v", j.Spreads[0])
	}
	tg := j.TaskGroups[0]
	if !reflect.DeepEqual(tg.Affinities, []*structs.Affinity{{LTarget: "${meta.rack}", Operand: "!=", RTarget: "r9", Weight: 50}}) {
		t.Fatalf("group affinities %v", tg.Affinities)
	}
	if !reflect.DeepEqual(tg.Spreads, []*structs.Spread{{Attribute: "${meta.rack}", Weight: 50}}) {
		t.Fatalf("group spreads %+v", tg.Spreads[0])
	}
	if !reflect.DeepEqual(tg.Tasks[0].Affinities, []*structs.Affinity{{LTarget: "${attr.kernel.version}", Operand: "version", RTarget: ">= 5.0", Weight: -30}}) {
		t.Fatalf("task affinities %v", tg.Tasks[0].Affinities)
	}

	// Read back through Nomad's api types, as `nomad job inspect` does.
	out, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	var back api.Job
	if err := json.Unmarshal(out, &back); err != nil {
		t.Fatal(err)
	}
	if a := back.Affinities[0]; a.LTarget != "${node.class}" || *a.Weight != 80 {
		t.Fatalf("api affinity %+v", a)
	}
	if s := back.Spreads[0]; s.Attribute != "${node.datacenter}" || *s.Weight != 100 || s.SpreadTarget[1].Value != "dc2" || s.SpreadTarget[1].Percent != 30 {
		t.Fatalf("api spread %+v", s)
	}
	if a := back.TaskGroups[0].Tasks[0].Affinities[0]; *a.Weight != -30 {
		t.Fatalf("api task affinity %+v", a)
	}

	// A job without them keeps none (nil, so versions compare equal
	// after a round trip through the store).
	plain, err := DecodeRegisterRequest(strings.NewReader(minimalService))
	if err != nil {
		t.Fatal(err)
	}
	if plain.Job.Affinities != nil || plain.Job.Spreads != nil || plain.Job.TaskGroups[0].Affinities != nil {
		t.Fatalf("empty blocks kept: %+v", plain.Job)
	}
}
