package jobspec

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/structs"
)

// servicesJob is a job with a group network, a group service with an http
// check and a task service with a script check.
const servicesJob = `{"Job": {
	"ID": "shop", "Name": "shop",
	"TaskGroups": [{
		"Name": "web",
		"Networks": [{"DynamicPorts": [{"Label": "http"}, {"Label": "admin"}]}],
		"Services": [{
			"Name": "${JOB}-front", "PortLabel": "http", "Tags": ["v1", "public"], "CanaryTags": ["canary"],
			"Meta": {"team": "shop"},
			"CheckRestart": {"Limit": 3, "Grace": 5000000000},
			"Checks": [
				{"Type": "HTTP", "Path": "/health", "Method": "POST", "Protocol": "http", "Interval": 10000000000, "Timeout": 2000000000,
				 "Header": {"X-Probe": ["1"]}, "Body": "{}"},
				{"Name": "alive", "Type": "tcp", "PortLabel": "admin", "Interval": 1000000000, "Timeout": 1000000000,
				 "CheckRestart": {"Limit": 1, "IgnoreWarnings": true}, "OnUpdate": "ignore"},
				{"Name": "script", "Type": "script", "Command": "/bin/true", "Args": ["-x"], "TaskName": "server", "Interval": 5000000000, "Timeout": 1000000000}
			]
		}],
		"Tasks": [{
			"Name": "server", "Driver": "raw_exec", "Config": {"command": "/bin/sleep", "args": ["3600"]},
			"Services": [{
				"PortLabel": "admin", "OnUpdate": "ignore_warnings",
				"Checks": [{"Type": "script", "Command": "/bin/check", "Interval": 2000000000, "Timeout": 1000000000}]
			}, {"Name": "${NOMAD_JOB_NAME}-${TASK}-x", "PortLabel": "http"}]
		}]
	}]
}}`

func TestServicesAreConvertedWithNomadsDefaults(t *testing.T) {
	j := decode(t, servicesJob).Job
	tg := j.TaskGroups[0]
	if len(tg.Services) != 1 || len(tg.Tasks[0].Services) != 2 {
		t.Fatalf("services: group %d, task %d", len(tg.Services), len(tg.Tasks[0].Services))
	}
	g := tg.Services[0]
	eq(t, "group service name (${JOB})", g.Name, "shop-front")
	eq(t, "provider default", g.Provider, structs.ServiceProviderNomad)
	eq(t, "address mode default", g.AddressMode, structs.AddressModeAuto)
	eq(t, "service on_update default", g.OnUpdate, structs.OnUpdateRequireHealthy)
	eq(t, "group service task", g.TaskName, "")
	if !reflect.DeepEqual(g.Tags, []string{"v1", "public"}) || !reflect.DeepEqual(g.CanaryTags, []string{"canary"}) || g.Meta["team"] != "shop" {
		t.Errorf("tags/meta: %v %v %v", g.Tags, g.CanaryTags, g.Meta)
	}
	httpCheck, tcpCheck, script := g.Checks[0], g.Checks[1], g.Checks[2]
	want := &structs.ServiceCheck{
		Name: `service: "shop-front" check`, Type: "http", Path: "/health", Method: "POST", Protocol: "http",
		Header: map[string][]string{"X-Probe": {"1"}}, Body: "{}",
		Interval: 10 * time.Second, Timeout: 2 * time.Second, OnUpdate: structs.OnUpdateRequireHealthy,
		CheckRestart: &structs.CheckRestart{Limit: 3, Grace: 5 * time.Second},
	}
	if !reflect.DeepEqual(httpCheck, want) {
		t.Errorf("http check:\n got %+v\nwant %+v", httpCheck, want)
	}
	// The check's check_restart is merged over the service's; on_update is its own.
	if r := tcpCheck.CheckRestart; r == nil || *r != (structs.CheckRestart{Limit: 1, Grace: 5 * time.Second, IgnoreWarnings: true}) {
		t.Errorf("tcp check_restart = %+v", r)
	}
	eq(t, "tcp on_update", tcpCheck.OnUpdate, structs.OnUpdateIgnore)
	eq(t, "tcp port", tcpCheck.PortLabel, "admin")
	eq(t, "script task", script.TaskName, "server")
	if script.Command != "/bin/true" || !reflect.DeepEqual(script.Args, []string{"-x"}) {
		t.Errorf("script command %q %v", script.Command, script.Args)
	}

	ts := tg.Tasks[0].Services
	eq(t, "task service default name", ts[0].Name, "shop-web-server")
	eq(t, "task service task", ts[0].TaskName, "server")
	eq(t, "task check inherits on_update", ts[0].Checks[0].OnUpdate, structs.OnUpdateIgnoreWarn)
	eq(t, "task script check runs in its task", ts[0].Checks[0].TaskName, "server")
	eq(t, "task check default grace-less check_restart", ts[0].Checks[0].CheckRestart == nil, true)
	eq(t, "env references are left for the node agent", ts[1].Name, "${NOMAD_JOB_NAME}-server-x")
}

// A service job read back from drover (its structs form) validates again.
func TestServicesRoundTripValidate(t *testing.T) {
	j := decode(t, servicesJob).Job
	b, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	var back structs.Job
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&back, j) {
		t.Fatalf("round trip differs")
	}
	if err := Validate(&back); err != nil {
		t.Fatalf("validate: %v", err)
	}
}

func withService(svc obj) func(obj) {
	return func(m obj) {
		grp(m, 0)["Networks"] = list(obj{"DynamicPorts": list(obj{"Label": "http"})})
		grp(m, 0)["Services"] = list(svc)
	}
}

func withTaskService(svc obj) func(obj) {
	return func(m obj) {
		grp(m, 0)["Networks"] = list(obj{"DynamicPorts": list(obj{"Label": "http"})})
		tsk(m, 0, 0)["Services"] = list(svc)
	}
}

func httpCheck(extra obj) obj {
	c := obj{"Type": "http", "Path": "/health", "Interval": ns("10s"), "Timeout": ns("2s")}
	for k, v := range extra {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return c
}

func TestServiceBadInput(t *testing.T) {
	const sp = gp + `.Services[0] "api"`
	const tsp = tp + `.Services[0] "api"`
	const cp = sp + ".Checks[0]"
	svc := func(extra obj) obj {
		s := obj{"Name": "api", "PortLabel": "http"}
		for k, v := range extra {
			s[k] = v
		}
		return s
	}
	check := func(c obj) obj { return svc(obj{"Checks": list(c)}) }
	cases := []badCase{
		{name: "provider consul", mut: withService(svc(obj{"Provider": "consul"})), field: sp + ".Provider", rule: `provider "consul" is not supported`},
		{name: "provider unknown", mut: withService(svc(obj{"Provider": "etcd"})), field: sp + ".Provider", rule: `unknown provider "etcd"`},
		{name: "task provider consul", mut: withTaskService(svc(obj{"Provider": "consul"})), field: tsp + ".Provider", rule: `provider "consul" is not supported`},
		{name: "connect", mut: withService(svc(obj{"Connect": obj{"Native": true}})), field: sp + ".Connect", rule: "Consul Connect"},
		{name: "canary_meta", mut: withService(svc(obj{"CanaryMeta": obj{"a": "b"}})), field: sp + ".CanaryMeta", rule: "Consul setting"},
		{name: "tagged_addresses", mut: withService(svc(obj{"TaggedAddresses": obj{"wan": "1.2.3.4"}})), field: sp + ".TaggedAddresses", rule: "Consul setting"},
		{name: "enable_tag_override", mut: withService(svc(obj{"EnableTagOverride": true})), field: sp + ".EnableTagOverride", rule: "Consul setting"},
		{name: "weights", mut: withService(svc(obj{"Weights": obj{"Passing": 2}})), field: sp + ".Weights", rule: "Consul setting"},
		{name: "kind", mut: withService(svc(obj{"Kind": "api-gateway"})), field: sp + ".Kind", rule: "Consul setting"},
		{name: "service identity", mut: withService(svc(obj{"Identity": obj{"Name": "x"}})), field: sp + ".Identity", rule: "Consul setting"},
		{name: "null service", mut: func(m obj) { grp(m, 0)["Services"] = list(nil) }, field: gp + ".Services[0]", rule: "must not be null"},
		{name: "name invalid", mut: withService(svc(obj{"Name": "my_api"})), field: gp + `.Services[0] "my_api".Name`, rule: "RFC 1123"},
		{name: "name too long", mut: withService(svc(obj{"Name": strings.Repeat("a", 64)})), field: gp + `.Services[0] "` + strings.Repeat("a", 64) + `".Name`, rule: "RFC 1123"},
		{name: "name invalid around interpolation", mut: withService(svc(obj{"Name": "a.${NOMAD_TASK_NAME}"})), field: gp + `.Services[0] "a.${NOMAD_TASK_NAME}".Name`, rule: "RFC 1123"},
		{name: "port label unknown", mut: withService(svc(obj{"PortLabel": "grpc"})), field: sp + ".PortLabel", rule: `port label "grpc" is not a port of the group's network (ports: http)`},
		{name: "port number without alloc mode", mut: withService(svc(obj{"PortLabel": "8080"})), field: sp + ".PortLabel", rule: `needs address_mode "alloc" or an address`},
		{name: "port number out of range", mut: withService(svc(obj{"PortLabel": "70000", "AddressMode": "alloc"})), field: sp + ".PortLabel", rule: "between 1 and 65535"},
		{name: "address mode driver", mut: withService(svc(obj{"AddressMode": "driver"})), field: sp + ".AddressMode", rule: `"driver" is not supported by drover yet`},
		{name: "address mode unknown", mut: withService(svc(obj{"AddressMode": "public"})), field: sp + ".AddressMode", rule: `unknown address_mode "public"`},
		{name: "address with host mode", mut: withService(svc(obj{"Address": "10.0.0.1", "AddressMode": "host"})), field: sp + ".Address", rule: `only be set with address_mode "auto"`},
		{name: "on_update unknown", mut: withService(svc(obj{"OnUpdate": "never"})), field: sp + ".OnUpdate", rule: `unknown on_update "never"`},
		{name: "group service task unknown", mut: withService(svc(obj{"TaskName": "nope"})), field: sp + ".TaskName", rule: `task "nope" is not a task of the group`},
		{name: "duplicate service", mut: func(m obj) {
			withService(svc(nil))(m)
			tsk(m, 0, 0)["Services"] = list(svc(nil))
		}, field: tsp + ".Name", rule: `service "api" on port "http" is already defined by ` + sp},

		// Checks.
		{name: "check grpc", mut: withService(check(httpCheck(obj{"Type": "grpc"}))), field: cp + ".Type", rule: "grpc checks are not supported"},
		{name: "check grpc service", mut: withService(check(httpCheck(obj{"GRPCService": "x"}))), field: cp + ".GRPCService", rule: "grpc checks are not supported"},
		{name: "check expose", mut: withService(check(httpCheck(obj{"Expose": true}))), field: cp + ".Expose", rule: "Consul Connect"},
		{name: "check advertise", mut: withService(check(httpCheck(obj{"Advertise": "1.2.3.4"}))), field: cp + ".Advertise", rule: "Consul check setting"},
		{name: "check success_before_passing", mut: withService(check(httpCheck(obj{"SuccessBeforePassing": 2}))), field: cp + ".SuccessBeforePassing", rule: "Consul check setting"},
		{name: "check failures_before_critical", mut: withService(check(httpCheck(obj{"FailuresBeforeCritical": 2}))), field: cp + ".FailuresBeforeCritical", rule: "Consul check setting"},
		{name: "check type missing", mut: withService(check(httpCheck(obj{"Type": nil}))), field: cp + ".Type", rule: "must be set"},
		{name: "check type unknown", mut: withService(check(httpCheck(obj{"Type": "icmp"}))), field: cp + ".Type", rule: `unknown check type "icmp"`},
		{name: "check interval missing", mut: withService(check(httpCheck(obj{"Interval": nil}))), field: cp + ".Interval", rule: "must be set"},
		{name: "check interval below 1s", mut: withService(check(httpCheck(obj{"Interval": ns("500ms")}))), field: cp + ".Interval", rule: "must be at least 1s (got 500ms)"},
		{name: "check timeout missing", mut: withService(check(httpCheck(obj{"Timeout": nil}))), field: cp + ".Timeout", rule: "must be set"},
		{name: "check timeout below 1s", mut: withService(check(httpCheck(obj{"Timeout": ns("100ms")}))), field: cp + ".Timeout", rule: "must be at least 1s"},
		{name: "http check without path", mut: withService(check(httpCheck(obj{"Path": nil}))), field: cp + ".Path", rule: "must be set for an http check"},
		{name: "http check absolute url", mut: withService(check(httpCheck(obj{"Path": "http://example.com/health"}))), field: cp + ".Path", rule: "must be a relative path"},
		{name: "http check protocol", mut: withService(check(httpCheck(obj{"Protocol": "ftp"}))), field: cp + ".Protocol", rule: `unknown protocol "ftp"`},
		{name: "http check method", mut: withService(check(httpCheck(obj{"Method": "FETCH"}))), field: cp + ".Method", rule: `unknown HTTP method "FETCH"`},
		{name: "http check header name", mut: withService(check(httpCheck(obj{"Header": obj{"Bad Name": list("x")}}))), field: cp + ".Header", rule: `header name "Bad Name"`},
		{name: "http check without port", mut: func(m obj) {
			grp(m, 0)["Services"] = list(obj{"Name": "api", "Checks": list(httpCheck(nil))})
		}, field: gp + `.Services[0] "api".Checks[0].PortLabel`, rule: "an http check needs a port"},
		{name: "tcp check port unknown", mut: withService(check(httpCheck(obj{"Type": "tcp", "PortLabel": "db"}))), field: cp + ".PortLabel", rule: `port label "db" is not a port`},
		{name: "script check without command", mut: withService(check(obj{"Type": "script", "TaskName": "server", "Interval": ns("5s"), "Timeout": ns("1s")})), field: cp + ".Command", rule: "must be set for a script check"},
		{name: "group script check without task", mut: withService(check(obj{"Type": "script", "Command": "/bin/true", "Interval": ns("5s"), "Timeout": ns("1s")})), field: cp + ".TaskName", rule: "must be set for a script check of a group service"},
		{name: "group script check unknown task", mut: withService(check(obj{"Type": "script", "Command": "/bin/true", "TaskName": "db", "Interval": ns("5s"), "Timeout": ns("1s")})), field: cp + ".TaskName", rule: `task "db" is not a task of the group`},
		{name: "task check naming another task", mut: withTaskService(check(obj{"Type": "script", "Command": "/bin/true", "TaskName": "other", "Interval": ns("5s"), "Timeout": ns("1s")})), field: tsp + ".Checks[0].TaskName", rule: `a task service's checks run in its task "server"`},
		{name: "check address mode driver", mut: withService(check(httpCheck(obj{"AddressMode": "driver"}))), field: cp + ".AddressMode", rule: "not supported by drover yet"},
		{name: "check initial status", mut: withService(check(httpCheck(obj{"InitialStatus": "ok"}))), field: cp + ".InitialStatus", rule: `unknown status "ok"`},
		{name: "check_restart negative limit", mut: withService(check(httpCheck(obj{"CheckRestart": obj{"Limit": -1}}))), field: cp + ".CheckRestart.Limit", rule: "must not be negative"},
		{name: "check_restart negative grace", mut: withService(check(httpCheck(obj{"CheckRestart": obj{"Grace": -1}}))), field: cp + ".CheckRestart.Grace", rule: "must not be negative"},
		{name: "check on_update unknown", mut: withService(check(httpCheck(obj{"OnUpdate": "sometimes"}))), field: cp + ".OnUpdate", rule: `unknown on_update "sometimes"`},
		{name: "check duplicate name", mut: withService(svc(obj{"Checks": list(httpCheck(obj{"Name": "c"}), httpCheck(obj{"Name": "c"}))})), field: sp + `.Checks[1] "c".Name`, rule: "already the name of Checks[0]"},
		{name: "null check", mut: withService(svc(obj{"Checks": list(nil)})), field: cp + ".Type", rule: "must be set"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := baseBody(t, minimalService)
			c.mut(m)
			b, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			req, err := DecodeRegisterRequest(strings.NewReader(string(b)))
			if err == nil {
				t.Fatalf("accepted %s\njob: %+v", b, req.Job)
			}
			assertError(t, err, c.field, c.rule)
		})
	}
}

// Accepted variants: a port number with address_mode alloc, a custom
// address, a service with no port and a script check.
func TestServiceAcceptedVariants(t *testing.T) {
	for name, svc := range map[string]obj{
		"port number alloc": {"Name": "a", "PortLabel": "8080", "AddressMode": "alloc"},
		"custom address":    {"Name": "a", "PortLabel": "8080", "Address": "db.example.com"},
		"no port":           {"Name": "a", "Checks": list(obj{"Type": "script", "Command": "/bin/true", "TaskName": "server", "Interval": ns("1s"), "Timeout": ns("1s")})},
		"provider nomad":    {"Name": "a", "PortLabel": "http", "Provider": "nomad", "Checks": list(httpCheck(obj{"Protocol": "https", "TLSSkipVerify": true}))},
	} {
		t.Run(name, func(t *testing.T) {
			m := baseBody(t, minimalService)
			withService(svc)(m)
			b, _ := json.Marshal(m)
			if _, err := DecodeRegisterRequest(strings.NewReader(string(b))); err != nil {
				t.Fatalf("refused: %v", err)
			}
		})
	}
}

// Templates may read the service registry now that drover has one.
func TestTemplatesMayCallNomadService(t *testing.T) {
	m := baseBody(t, minimalService)
	tsk(m, 0, 0)["Templates"] = list(tmpl("local/upstreams", `{{ range nomadService "api" }}{{ .Address }}:{{ .Port }}{{ end }}{{ range nomadServices }}{{ .Name }}{{ end }}`))
	b, _ := json.Marshal(m)
	if _, err := DecodeRegisterRequest(strings.NewReader(string(b))); err != nil {
		t.Fatalf("refused: %v", err)
	}
}
