package jobfile

import (
	"strings"
	"testing"
)

// TestAffinityAndSpreadDecode: affinity blocks (with the operator
// defaulting to "=", and a shorthand) and spread blocks with labelled
// target blocks, at job, group and task level, as Nomad's HCL has them.
func TestAffinityAndSpreadDecode(t *testing.T) {
	job, err := parseString(`
job "web" {
  affinity {
    attribute = "${node.class}"
    value     = "large"
    weight    = 80
  }
  spread {
    attribute = "${node.datacenter}"
    weight    = 100
    target "dc1" { percent = 70 }
    target "dc2" { percent = 30 }
  }
  group "web" {
    count = 10
    affinity {
      attribute = "${meta.rack}"
      set_contains_any = "r1,r2"
      weight = -50
    }
    spread { attribute = "${meta.rack}" }
    task "server" {
      driver = "raw_exec"
      config { command = "/bin/sleep" }
      affinity {
        attribute = "${attr.kernel.version}"
        operator  = "version"
        value     = ">= 5.0"
      }
    }
  }
}`, Config{})
	if err != nil {
		t.Fatal(err)
	}
	a := job.Affinities[0]
	if a.LTarget != "${node.class}" || a.Operand != "=" || a.RTarget != "large" || a.Weight == nil || *a.Weight != 80 {
		t.Fatalf("job affinity: %+v", a)
	}
	s := job.Spreads[0]
	if s.Attribute != "${node.datacenter}" || *s.Weight != 100 || len(s.SpreadTarget) != 2 ||
		s.SpreadTarget[0].Value != "dc1" || s.SpreadTarget[0].Percent != 70 || s.SpreadTarget[1].Value != "dc2" || s.SpreadTarget[1].Percent != 30 {
		t.Fatalf("job spread: %+v", s)
	}
	tg := job.TaskGroups[0]
	if g := tg.Affinities[0]; g.Operand != "set_contains_any" || g.RTarget != "r1,r2" || *g.Weight != -50 {
		t.Fatalf("group affinity: %+v", g)
	}
	if gs := tg.Spreads[0]; gs.Attribute != "${meta.rack}" || gs.Weight != nil || len(gs.SpreadTarget) != 0 {
		t.Fatalf("group spread: %+v", gs)
	}
	if ta := tg.Tasks[0].Affinities[0]; ta.Operand != "version" || ta.RTarget != ">= 5.0" || ta.Weight != nil {
		t.Fatalf("task affinity: %+v", ta)
	}
}

// TestOutOfRangeNumber: a number that does not fit its field (an affinity
// weight of 200 in Nomad's int8) is reported with the field's range, not
// as "expected a number, got a number".
func TestOutOfRangeNumber(t *testing.T) {
	_, err := parseString(`
job "web" {
  group "web" {
    affinity {
      attribute = "${node.datacenter}"
      value     = "dc1"
      weight    = 200
    }
    task "server" {
      driver = "raw_exec"
      config { command = "/bin/sleep" }
    }
  }
}`, Config{})
	if err == nil || !strings.Contains(err.Error(), "expected a whole number from -128 to 127, got 200") {
		t.Fatalf("weight 200: %v", err)
	}
}

// TestTaskScalingBlock: a task's scaling block is labelled by the resource
// (Nomad Enterprise's vertical policies); it parses, with the type Nomad's
// HCL gives it, so that the API refuses it by name rather than the parser
// reporting an unexpected label.
func TestTaskScalingBlock(t *testing.T) {
	job, err := parseString(`
job "web" {
  group "web" {
    task "server" {
      driver = "raw_exec"
      config { command = "/bin/sleep" }
      scaling "cpu" {
        min = 50
        max = 500
      }
      scaling "mem" {
        max = 1024
      }
    }
  }
}`, Config{})
	if err != nil {
		t.Fatal(err)
	}
	ps := job.TaskGroups[0].Tasks[0].ScalingPolicies
	if len(ps) != 2 || ps[0].Type != "vertical_cpu" || *ps[0].Max != 500 || ps[1].Type != "vertical_mem" {
		t.Fatalf("task scaling policies: %+v", ps)
	}
}
