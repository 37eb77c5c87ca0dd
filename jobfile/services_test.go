package jobfile

import (
	"testing"
	"time"

	"github.com/drover-sched/drover/jobspec"
	"github.com/drover-sched/drover/structs"
)

// Group and task service blocks with checks parse from HCL as Nomad's
// job files write them, and convert to drover's services.
func TestServiceBlocks(t *testing.T) {
	src := `
job "shop" {
  group "web" {
    network {
      port "http" {}
    }
    service {
      name     = "${NOMAD_JOB_NAME}-front"
      port     = "http"
      tags     = ["v1"]
      provider = "nomad"
      meta {
        team = "shop"
      }
      check_restart {
        limit = 3
        grace = "10s"
      }
      check {
        type     = "http"
        path     = "/health"
        method   = "GET"
        interval = "5s"
        timeout  = "1s"
        header {
          X-Probe = ["a", "b"]
        }
      }
      check {
        name      = "run"
        type      = "script"
        command   = "/bin/true"
        args      = ["-v"]
        task      = "server"
        interval  = "10s"
        timeout   = "2s"
        on_update = "ignore"
      }
    }
    task "server" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["300"]
      }
      service {
        name         = "raw"
        port         = 8080
        address_mode = "alloc"
      }
      service {
        port = "http"
        check {
          type     = "tcp"
          interval = "1s"
          timeout  = "1s"
        }
      }
    }
  }
}
`
	aj, err := parseString(src, Config{})
	if err != nil {
		t.Fatal(err)
	}
	job, err := jobspec.FromAPI(aj)
	if err != nil {
		t.Fatal(err)
	}
	tg := job.TaskGroups[0]
	s := tg.Services[0]
	if s.Name != "${NOMAD_JOB_NAME}-front" || s.PortLabel != "http" || s.Meta["team"] != "shop" || s.Provider != structs.ServiceProviderNomad {
		t.Fatalf("group service: %+v", s)
	}
	h := s.Checks[0]
	if h.Type != "http" || h.Path != "/health" || h.Interval != 5*time.Second || h.Timeout != time.Second ||
		len(h.Header["X-Probe"]) != 2 || h.CheckRestart == nil || h.CheckRestart.Limit != 3 || h.CheckRestart.Grace != 10*time.Second {
		t.Fatalf("http check: %+v %+v", h, h.CheckRestart)
	}
	sc := s.Checks[1]
	if sc.Type != "script" || sc.Command != "/bin/true" || sc.TaskName != "server" || sc.OnUpdate != structs.OnUpdateIgnore || sc.Args[0] != "-v" {
		t.Fatalf("script check: %+v", sc)
	}
	if raw := tg.Tasks[0].Services[0]; raw.Name != "raw" || raw.PortLabel != "8080" || raw.AddressMode != structs.AddressModeAlloc {
		t.Fatalf("numeric port service: %+v", raw)
	}
	ts := tg.Tasks[0].Services[1]
	if ts.Name != "shop-web-server" || ts.Checks[0].Type != "tcp" || ts.TaskName != "server" {
		t.Fatalf("task service: %+v %+v", ts, ts.Checks[0])
	}
}

// A Consul service in a job file is refused naming the field.
func TestServiceConsulProviderRefused(t *testing.T) {
	aj, err := parseString(`job "j" {
  group "g" {
    service {
      name     = "x"
      provider = "consul"
    }
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
    }
  }
}`, Config{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = jobspec.FromAPI(aj)
	if err == nil || !containsField(err, `Job.TaskGroups[0] "g".Services[0] "x".Provider`) {
		t.Fatalf("err = %v", err)
	}
}

func containsField(err error, field string) bool {
	es, ok := err.(jobspec.ValidationErrors)
	if !ok {
		return false
	}
	for _, e := range es {
		if e.Field == field {
			return true
		}
	}
	return false
}
