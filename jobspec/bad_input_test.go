package jobspec

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

type obj = map[string]any

func baseBody(t *testing.T, body string) obj {
	t.Helper()
	var m obj
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func jobOf(m obj) obj                { return m["Job"].(obj) }
func grp(m obj, i int) obj           { return jobOf(m)["TaskGroups"].([]any)[i].(obj) }
func tsk(m obj, i, j int) obj        { return grp(m, i)["Tasks"].([]any)[j].(obj) }
func ns(s string) int64              { d, _ := time.ParseDuration(s); return int64(d) }
func list(vs ...any) []any           { return vs }
func constraint(l, op, r string) obj { return obj{"LTarget": l, "Operand": op, "RTarget": r} }
func affinity(l, op, r string, w int) obj {
	return obj{"LTarget": l, "Operand": op, "RTarget": r, "Weight": w}
}

// addGroup appends a copy of group 0 named name.
func addGroup(m obj, name string) {
	b, _ := json.Marshal(grp(m, 0))
	var g obj
	_ = json.Unmarshal(b, &g)
	g["Name"] = name
	j := jobOf(m)
	j["TaskGroups"] = append(j["TaskGroups"].([]any), g)
}

// addTask appends a copy of task 0 of group 0 named name.
func addTask(m obj, name string) {
	b, _ := json.Marshal(tsk(m, 0, 0))
	var t obj
	_ = json.Unmarshal(b, &t)
	t["Name"] = name
	g := grp(m, 0)
	g["Tasks"] = append(g["Tasks"].([]any), t)
}

const (
	jp = "Job"
	gp = `Job.TaskGroups[0] "web"`
	tp = `Job.TaskGroups[0] "web".Tasks[0] "server"`
)

type badCase struct {
	name  string
	body  string      // raw body, or
	batch bool        // start from the minimal batch job (group "run", task "main"), else the service job
	mut   func(m obj) // a change to the minimal job
	field string      // the field the error must name
	rule  string      // a substring of the rule
}

func TestBadInput(t *testing.T) {
	cases := []badCase{
		// Decoding.
		{name: "malformed JSON", body: `{"Job": {"ID": "x",}}`, field: "Job", rule: "malformed JSON at line 1, column 20"},
		{name: "truncated JSON", body: `{"Job": {"ID": "x", "TaskGroups": [`, field: "Job.TaskGroups", rule: "unexpected end of input"},
		{name: "trailing data", body: `{"Job": {"ID": "x"}} {}`, field: "body", rule: "unexpected data after the top-level value"},
		{name: "empty body", body: " \n", field: "body", rule: "is empty"},
		{name: "top-level array", body: `[{"Job": {}}]`, field: "body", rule: "expected object, got array"},
		{name: "missing Job", body: `{"EnforceIndex": true}`, field: "Job", rule: "is missing"},
		{name: "null Job", body: `{"Job": null}`, field: "Job", rule: "is missing"},
		{name: "wrong type count", mut: func(m obj) { grp(m, 0)["Count"] = "3" }, field: "Job.TaskGroups[0].Count", rule: "expected number, got string"},
		{name: "wrong type datacenters", mut: func(m obj) { jobOf(m)["Datacenters"] = "dc1" }, field: "Job.Datacenters", rule: "expected array, got string"},
		{name: "wrong type datacenter element", mut: func(m obj) { jobOf(m)["Datacenters"] = list("dc1", 2) }, field: "Job.Datacenters[1]", rule: "expected string, got number"},
		{name: "wrong type priority float", mut: func(m obj) { jobOf(m)["Priority"] = 1.5 }, field: "Job.Priority", rule: "expected an integer (int), got 1.5"},
		{name: "wrong type duration string", mut: func(m obj) { tsk(m, 0, 0)["KillTimeout"] = "5s" }, field: "Job.TaskGroups[0].Tasks[0].KillTimeout", rule: "expected number, got string"},
		{name: "wrong type bool", mut: func(m obj) { jobOf(m)["AllAtOnce"] = "yes" }, field: "Job.AllAtOnce", rule: "expected boolean, got string"},
		{name: "wrong type group object", mut: func(m obj) { jobOf(m)["TaskGroups"] = list("web") }, field: "Job.TaskGroups[0]", rule: "expected object, got string"},
		{name: "wrong type meta value", mut: func(m obj) { jobOf(m)["Meta"] = obj{"owner": 1} }, field: "Job.Meta.owner", rule: "expected string, got number"},
		{name: "wrong type request option", mut: func(m obj) { m["EnforceIndex"] = "true" }, field: "EnforceIndex", rule: "expected boolean, got string"},
		{name: "integer overflow", mut: func(m obj) { m["JobModifyIndex"] = -1 }, field: "JobModifyIndex", rule: "expected a non-negative integer"},
		{name: "number out of range", mut: func(m obj) { tsk(m, 0, 0)["Config"] = obj{"command": "x", "big": json.Number("1e400")} }, field: "Job.TaskGroups[0].Tasks[0].Config.big", rule: "number 1e400 does not fit float64"},
		{name: "invalid base64", mut: func(m obj) { jobOf(m)["Payload"] = "!!" }, field: "Job.Payload", rule: "expected base64 string"},
		{name: "unknown field", mut: func(m obj) { grp(m, 0)["Cuont"] = 3 }, field: "Job.TaskGroups[0].Cuont", rule: "unknown field"},
		{name: "unknown top-level field", mut: func(m obj) { m["Jobs"] = obj{} }, field: "Jobs", rule: "unknown field"},
		{name: "unknown nested field", mut: func(m obj) { tsk(m, 0, 0)["Resources"] = obj{"Memory": 100} }, field: "Job.TaskGroups[0].Tasks[0].Resources.Memory", rule: "unknown field"},

		// Job.
		{name: "ID empty", mut: func(m obj) { jobOf(m)["ID"] = ""; jobOf(m)["Name"] = "web" }, field: "Job.ID", rule: "must not be empty"},
		{name: "ID with space", mut: func(m obj) { jobOf(m)["ID"] = "my job" }, field: "Job.ID", rule: "must not contain spaces"},
		{name: "ID with a slash", mut: func(m obj) { jobOf(m)["ID"] = "a/b" }, field: "Job.ID", rule: "usable in a URL path"},
		{name: "ID dot-dot", mut: func(m obj) { jobOf(m)["ID"] = ".." }, field: "Job.ID", rule: "usable in a URL path"},
		{name: "ID with a control character", mut: func(m obj) { jobOf(m)["ID"] = "a\x01b" }, field: "Job.ID", rule: "usable in a URL path"},
		{name: "count above drover's limit", mut: func(m obj) { grp(m, 0)["Count"] = 99999999999 }, field: gp + ".Count", rule: "must be at most 10000"},
		{name: "task user", mut: func(m obj) { tsk(m, 0, 0)["User"] = "nobody" }, field: tp + ".User", rule: "is not supported by the raw_exec driver: it runs tasks as the agent's user"},
		{name: "task named alloc", mut: func(m obj) { tsk(m, 0, 0)["Name"] = "alloc" }, field: gp + `.Tasks[0] "alloc".Name`, rule: "must not be"},
		{name: "task named dot-dot", mut: func(m obj) { tsk(m, 0, 0)["Name"] = ".." }, field: gp + `.Tasks[0] "..".Name`, rule: "must not be"},
		{name: "env value with a null character", mut: func(m obj) { tsk(m, 0, 0)["Env"] = obj{"X": "a\x00b"} }, field: tp + ".Env.X", rule: "null characters"},
		{name: "env name with '='", mut: func(m obj) { tsk(m, 0, 0)["Env"] = obj{"A=B": "x"} }, field: tp + ".Env", rule: "without '='"},
		{name: "ID with null", mut: func(m obj) { jobOf(m)["ID"] = "a\x00b" }, field: "Job.ID", rule: "null characters"},
		{name: "ID too long", mut: func(m obj) { jobOf(m)["ID"] = strings.Repeat("a", 129) }, field: "Job.ID", rule: "at most 128 bytes"},
		{name: "name empty", mut: func(m obj) { jobOf(m)["Name"] = "" }, field: "Job.Name", rule: "must not be empty"},
		{name: "name with null", mut: func(m obj) { jobOf(m)["Name"] = "a\x00" }, field: "Job.Name", rule: "null characters"},
		{name: "name too long", mut: func(m obj) { jobOf(m)["Name"] = strings.Repeat("n", 200) }, field: "Job.Name", rule: "at most 128 bytes"},
		{name: "namespace invalid", mut: func(m obj) { jobOf(m)["Namespace"] = "team a" }, field: "Job.Namespace", rule: "letters, digits or dashes"},
		{name: "namespace empty", mut: func(m obj) { jobOf(m)["Namespace"] = "" }, field: "Job.Namespace", rule: "must not be empty"},
		{name: "region empty", mut: func(m obj) { jobOf(m)["Region"] = "" }, field: "Job.Region", rule: "must not be empty"},
		{name: "type empty", mut: func(m obj) { jobOf(m)["Type"] = "" }, field: "Job.Type", rule: "must not be empty"},
		{name: "type unknown", mut: func(m obj) { jobOf(m)["Type"] = "cron" }, field: "Job.Type", rule: `unknown job type "cron"`},
		{name: "system count above one", mut: func(m obj) { jobOf(m)["Type"] = "system"; grp(m, 0)["Count"] = 2 },
			field: gp + ".Count", rule: "must be 0 or 1 for a system job"},
		{name: "system reschedule", mut: func(m obj) { jobOf(m)["Type"] = "system"; grp(m, 0)["ReschedulePolicy"] = obj{"Attempts": 1} },
			field: gp + ".ReschedulePolicy", rule: "system and sysbatch jobs must not have a reschedule policy"},
		{name: "sysbatch job reschedule", mut: func(m obj) { jobOf(m)["Type"] = "sysbatch"; jobOf(m)["Reschedule"] = obj{"Attempts": 1} },
			field: "Job.Reschedule", rule: "system and sysbatch jobs must not have a reschedule policy"},
		{name: "sysbatch update", mut: func(m obj) { jobOf(m)["Type"] = "sysbatch"; jobOf(m)["Update"] = obj{"MaxParallel": 1} },
			field: "Job.Update", rule: "update block is not allowed for sysbatch jobs"},
		{name: "system migrate", mut: func(m obj) { jobOf(m)["Type"] = "system"; grp(m, 0)["Migrate"] = obj{"MaxParallel": 1} },
			field: gp + ".Migrate", rule: "migrate block is not allowed for system jobs"},
		{name: "system canary", mut: func(m obj) { jobOf(m)["Type"] = "system"; jobOf(m)["Update"] = obj{"MaxParallel": 1, "Canary": 1} },
			field: "Job.Update.Canary", rule: "canaries are not supported for system jobs"},
		{name: "priority zero", mut: func(m obj) { jobOf(m)["Priority"] = 0 }, field: "Job.Priority", rule: "must be between 1 and 100 (got 0)"},
		{name: "priority too high", mut: func(m obj) { jobOf(m)["Priority"] = 101 }, field: "Job.Priority", rule: "must be between 1 and 100 (got 101)"},
		{name: "datacenter empty", mut: func(m obj) { jobOf(m)["Datacenters"] = list("dc1", "") }, field: "Job.Datacenters[1]", rule: "must not be empty"},
		{name: "node pool invalid", mut: func(m obj) { jobOf(m)["NodePool"] = "my pool" }, field: "Job.NodePool", rule: "letters, digits, dashes or underscores"},
		{name: "no groups", mut: func(m obj) { jobOf(m)["TaskGroups"] = list() }, field: "Job.TaskGroups", rule: "at least one group"},
		{name: "eval priority", mut: func(m obj) { m["EvalPriority"] = 101 }, field: "EvalPriority", rule: "must be between 1 and 100"},

		// Groups.
		{name: "group null", mut: func(m obj) { jobOf(m)["TaskGroups"] = list(nil) }, field: "Job.TaskGroups[0]", rule: "must not be null"},
		{name: "group name empty", mut: func(m obj) { grp(m, 0)["Name"] = "" }, field: "Job.TaskGroups[0].Name", rule: "must not be empty"},
		{name: "group name null char", mut: func(m obj) { grp(m, 0)["Name"] = "w\x00" }, field: `Job.TaskGroups[0] "w\x00".Name`, rule: "null characters"},
		{name: "duplicate group names", mut: func(m obj) { addGroup(m, "web") }, field: `Job.TaskGroups[1] "web".Name`, rule: "duplicates the name of Job.TaskGroups[0]"},
		{name: "negative count", mut: func(m obj) { grp(m, 0)["Count"] = -1 }, field: gp + ".Count", rule: "must not be negative (got -1)"},
		{name: "group with no tasks", mut: func(m obj) { grp(m, 0)["Tasks"] = list() }, field: gp + ".Tasks", rule: "at least one task"},
		{name: "group shutdown delay", mut: func(m obj) { grp(m, 0)["ShutdownDelay"] = -1 }, field: gp + ".ShutdownDelay", rule: "must not be negative"},
		{name: "ephemeral disk too small", mut: func(m obj) { grp(m, 0)["EphemeralDisk"] = obj{"SizeMB": 5} }, field: gp + ".EphemeralDisk.SizeMB", rule: "must be at least 10 MiB (got 5)"},
		{name: "two leaders", mut: func(m obj) { tsk(m, 0, 0)["Leader"] = true; addTask(m, "sidecar") }, field: gp + ".Tasks", rule: "at most one task may be the leader"},

		// Tasks.
		{name: "task null", mut: func(m obj) { grp(m, 0)["Tasks"] = list(nil) }, field: gp + ".Tasks[0]", rule: "must not be null"},
		{name: "task with no driver", mut: func(m obj) { tsk(m, 0, 0)["Driver"] = "" }, field: tp + ".Driver", rule: "must be set"},
		{name: "unknown driver", mut: func(m obj) { tsk(m, 0, 0)["Driver"] = "qemu" }, field: tp + ".Driver", rule: `unknown driver "qemu"`},
		{name: "duplicate task names", mut: func(m obj) { addTask(m, "server") }, field: gp + `.Tasks[1] "server".Name`, rule: "duplicates the name of Tasks[0]"},
		{name: "task name empty", mut: func(m obj) { tsk(m, 0, 0)["Name"] = "" }, field: gp + ".Tasks[0].Name", rule: "must not be empty"},
		{name: "task name slash", mut: func(m obj) { tsk(m, 0, 0)["Name"] = "a/b" }, field: gp + `.Tasks[0] "a/b".Name`, rule: "must not contain slashes"},
		{name: "task name null char", mut: func(m obj) { tsk(m, 0, 0)["Name"] = "a\x00" }, field: gp + `.Tasks[0] "a\x00".Name`, rule: "null characters"},
		{name: "raw_exec without command", mut: func(m obj) { tsk(m, 0, 0)["Config"] = obj{"args": list("x")} }, field: tp + ".Config.command", rule: "is required by the raw_exec driver"},
		{name: "raw_exec without config", mut: func(m obj) { delete(tsk(m, 0, 0), "Config") }, field: tp + ".Config.command", rule: "is required"},
		{name: "raw_exec empty command", mut: func(m obj) { tsk(m, 0, 0)["Config"] = obj{"command": ""} }, field: tp + ".Config.command", rule: "must not be empty"},
		{name: "raw_exec command not a string", mut: func(m obj) { tsk(m, 0, 0)["Config"] = obj{"command": list("sleep")} }, field: tp + ".Config.command", rule: "must be a string (got array)"},
		{name: "raw_exec args not strings", mut: func(m obj) { tsk(m, 0, 0)["Config"] = obj{"command": "sleep", "args": list("1", 2)} }, field: tp + ".Config.args[1]", rule: "must be a string (got number)"},
		{name: "raw_exec args not a list", mut: func(m obj) { tsk(m, 0, 0)["Config"] = obj{"command": "sleep", "args": "1 2"} }, field: tp + ".Config.args", rule: "must be a list of strings"},
		{name: "raw_exec unknown key", mut: func(m obj) { tsk(m, 0, 0)["Config"] = obj{"command": "sleep", "image": "redis"} }, field: tp + ".Config.image", rule: "is not a raw_exec option"},
		{name: "exec unknown key", mut: func(m obj) {
			tsk(m, 0, 0)["Driver"] = "exec"
			tsk(m, 0, 0)["Config"] = obj{"command": "sleep", "image": "redis"}
		}, field: tp + ".Config.image", rule: "is not an exec option drover supports (options: args, cap_add, cap_drop, command, ipc_mode, pid_mode, work_dir)"},
		{name: "exec pid mode", mut: func(m obj) {
			tsk(m, 0, 0)["Driver"] = "exec"
			tsk(m, 0, 0)["Config"] = obj{"command": "sleep", "pid_mode": "shared"}
		}, field: tp + ".Config.pid_mode", rule: `must be "private" or "host" (got "shared")`},
		{name: "exec cap_add", mut: func(m obj) {
			tsk(m, 0, 0)["Driver"] = "exec"
			tsk(m, 0, 0)["Config"] = obj{"command": "sleep", "cap_add": list("net_raw")}
		}, field: tp + ".Config.cap_add", rule: "changing a task's capabilities is not supported by drover yet"},
		{name: "exec relative work_dir", mut: func(m obj) {
			tsk(m, 0, 0)["Driver"] = "exec"
			tsk(m, 0, 0)["Config"] = obj{"command": "sleep", "work_dir": "local"}
		}, field: tp + ".Config.work_dir", rule: `must be an absolute path inside the task (got "local")`},
		{name: "exec without command", mut: func(m obj) { tsk(m, 0, 0)["Driver"] = "exec"; tsk(m, 0, 0)["Config"] = obj{"args": list("x")} }, field: tp + ".Config.command", rule: "is required by the exec driver"},
		{name: "docker without image", mut: func(m obj) { tsk(m, 0, 0)["Driver"] = "docker"; tsk(m, 0, 0)["Config"] = obj{"args": list("x")} }, field: tp + ".Config.image", rule: "is required by the docker driver"},
		{name: "docker empty image", mut: func(m obj) { tsk(m, 0, 0)["Driver"] = "docker"; tsk(m, 0, 0)["Config"] = obj{"image": " "} }, field: tp + ".Config.image", rule: "must not be empty"},
		{name: "docker unknown key", mut: func(m obj) {
			tsk(m, 0, 0)["Driver"] = "docker"
			tsk(m, 0, 0)["Config"] = obj{"image": "redis:7", "imagee": "x"}
		}, field: tp + ".Config.imagee", rule: "is not a docker option drover supports"},
		{name: "docker ports without group network", mut: func(m obj) {
			tsk(m, 0, 0)["Driver"] = "docker"
			tsk(m, 0, 0)["Config"] = obj{"image": "redis:7", "ports": list("db")}
		}, field: tp + ".Config.ports[0]", rule: `port label "db" must be one of the group network's ports`},
		{name: "docker volume shape", mut: func(m obj) {
			tsk(m, 0, 0)["Driver"] = "docker"
			tsk(m, 0, 0)["Config"] = obj{"image": "redis:7", "volumes": list("data")}
		}, field: tp + ".Config.volumes[0]", rule: `must be "host_path:container_path"`},
		{name: "docker volume mode", mut: func(m obj) {
			tsk(m, 0, 0)["Driver"] = "docker"
			tsk(m, 0, 0)["Config"] = obj{"image": "redis:7", "volumes": list("data:/data:rx")}
		}, field: tp + ".Config.volumes[0]", rule: `mode "rx" must be "ro" or "rw"`},
		{name: "docker mount type", mut: func(m obj) {
			tsk(m, 0, 0)["Driver"] = "docker"
			tsk(m, 0, 0)["Config"] = obj{"image": "redis:7", "mount": list(obj{"type": "nfs", "target": "/d"})}
		}, field: tp + ".Config.mount[0].type", rule: `must be "bind", "volume" or "tmpfs" (got "nfs")`},
		{name: "docker mount target", mut: func(m obj) {
			tsk(m, 0, 0)["Driver"] = "docker"
			tsk(m, 0, 0)["Config"] = obj{"image": "redis:7", "mount": list(obj{"type": "tmpfs"})}
		}, field: tp + ".Config.mount[0].target", rule: "is required by the docker driver"},
		{name: "docker auth unknown key", mut: func(m obj) {
			tsk(m, 0, 0)["Driver"] = "docker"
			tsk(m, 0, 0)["Config"] = obj{"image": "redis:7", "auth": list(obj{"user": "u"})}
		}, field: tp + ".Config.auth[0].user", rule: "is not a docker option drover supports (options: password, server_address, username)"},
		{name: "docker logging driver", mut: func(m obj) {
			tsk(m, 0, 0)["Driver"] = "docker"
			tsk(m, 0, 0)["Config"] = obj{"image": "redis:7", "logging": list(obj{"type": "syslog"})}
		}, field: tp + ".Config.logging.type", rule: `must be "json-file" or "local"`},
		{name: "docker dns server", mut: func(m obj) {
			tsk(m, 0, 0)["Driver"] = "docker"
			tsk(m, 0, 0)["Config"] = obj{"image": "redis:7", "dns_servers": list("dns.example")}
		}, field: tp + ".Config.dns_servers[0]", rule: `must be an IP address (got "dns.example")`},
		{name: "docker ulimit", mut: func(m obj) {
			tsk(m, 0, 0)["Driver"] = "docker"
			tsk(m, 0, 0)["Config"] = obj{"image": "redis:7", "ulimit": list(obj{"nofile": "many"})}
		}, field: tp + ".Config.ulimit.nofile", rule: `must be "soft:hard" or a number (got "many")`},
		{name: "docker labels not strings", mut: func(m obj) {
			tsk(m, 0, 0)["Driver"] = "docker"
			tsk(m, 0, 0)["Config"] = obj{"image": "redis:7", "labels": list(obj{"team": 1})}
		}, field: tp + ".Config.labels.team", rule: "must be a string (got number)"},
		{name: "kill timeout negative", mut: func(m obj) { tsk(m, 0, 0)["KillTimeout"] = -1 }, field: tp + ".KillTimeout", rule: "must not be negative"},
		{name: "kill timeout past progress deadline", mut: func(m obj) { tsk(m, 0, 0)["KillTimeout"] = ns("11m") }, field: tp + ".KillTimeout", rule: "must not be longer than the group's update progress_deadline (11m0s > 10m0s)"},
		{name: "kill signal unknown", mut: func(m obj) { tsk(m, 0, 0)["KillSignal"] = "SIGFOO" }, field: tp + ".KillSignal", rule: `unknown signal "SIGFOO"`},
		{name: "task shutdown delay", mut: func(m obj) { tsk(m, 0, 0)["ShutdownDelay"] = -5 }, field: tp + ".ShutdownDelay", rule: "must not be negative"},
		{name: "cpu below minimum", mut: func(m obj) { tsk(m, 0, 0)["Resources"] = obj{"CPU": 0} }, field: tp + ".Resources.CPU", rule: "must be at least 1 MHz (got 0)"},
		{name: "memory below minimum", mut: func(m obj) { tsk(m, 0, 0)["Resources"] = obj{"MemoryMB": 4} }, field: tp + ".Resources.MemoryMB", rule: "must be at least 10 MiB (got 4)"},
		{name: "memory max below memory", mut: func(m obj) { tsk(m, 0, 0)["Resources"] = obj{"MemoryMB": 256, "MemoryMaxMB": 128} }, field: tp + ".Resources.MemoryMaxMB", rule: "must be at least memory (256 MiB) (got 128)"},
		{name: "memory max unlimited", mut: func(m obj) { tsk(m, 0, 0)["Resources"] = obj{"MemoryMaxMB": -1} }, field: tp + ".Resources.MemoryMaxMB", rule: "must not be negative"},
		{name: "task disk", mut: func(m obj) { tsk(m, 0, 0)["Resources"] = obj{"DiskMB": 100} }, field: tp + ".Resources.DiskMB", rule: "ephemeral_disk"},
		{name: "log max files", mut: func(m obj) { tsk(m, 0, 0)["LogConfig"] = obj{"MaxFiles": 0} }, field: tp + ".LogConfig.MaxFiles", rule: "must be at least 1 (got 0)"},
		{name: "log max file size", mut: func(m obj) { tsk(m, 0, 0)["LogConfig"] = obj{"MaxFileSizeMB": 0} }, field: tp + ".LogConfig.MaxFileSizeMB", rule: "must be at least 1 MiB (got 0)"},
		{name: "logs exceed disk", mut: func(m obj) { tsk(m, 0, 0)["LogConfig"] = obj{"MaxFiles": 10, "MaxFileSizeMB": 30} }, field: tp + ".LogConfig", rule: "log storage (10 files × 30 MiB = 300 MiB) must be less than the group's ephemeral disk (300 MiB)"},
		{name: "lifecycle hook unknown", mut: func(m obj) { tsk(m, 0, 0)["Lifecycle"] = obj{"Hook": "during"} }, field: tp + ".Lifecycle.Hook", rule: `unknown hook "during"`},
		{name: "lifecycle hook missing", mut: func(m obj) { tsk(m, 0, 0)["Lifecycle"] = obj{"Sidecar": true} }, field: tp + ".Lifecycle.Hook", rule: "must be set"},

		// Restart policy.
		{name: "restart mode", mut: func(m obj) { grp(m, 0)["RestartPolicy"] = obj{"Mode": "sometimes"} }, field: gp + ".RestartPolicy.Mode", rule: `unknown mode "sometimes"`},
		{name: "restart zero attempts delay mode", mut: func(m obj) { grp(m, 0)["RestartPolicy"] = obj{"Mode": "delay", "Attempts": 0} }, field: gp + ".RestartPolicy.Attempts", rule: "ambiguous"},
		{name: "restart negative attempts", mut: func(m obj) { grp(m, 0)["RestartPolicy"] = obj{"Attempts": -1} }, field: gp + ".RestartPolicy.Attempts", rule: "must not be negative"},
		{name: "restart negative delay", mut: func(m obj) { grp(m, 0)["RestartPolicy"] = obj{"Delay": -1} }, field: gp + ".RestartPolicy.Delay", rule: "must not be negative"},
		{name: "restart interval too short", mut: func(m obj) { grp(m, 0)["RestartPolicy"] = obj{"Interval": ns("1s"), "Attempts": 1, "Delay": 0} }, field: gp + ".RestartPolicy.Interval", rule: "must be at least 5s (got 1s)"},
		{name: "restart attempts exceed interval", mut: func(m obj) {
			grp(m, 0)["RestartPolicy"] = obj{"Attempts": 10, "Delay": ns("1m"), "Interval": ns("5m")}
		}, field: gp + ".RestartPolicy.Interval", rule: "cannot fit 10 restarts 1m0s apart"},
		{name: "task restart invalid", mut: func(m obj) { tsk(m, 0, 0)["RestartPolicy"] = obj{"Mode": "never"} }, field: tp + ".RestartPolicy.Mode", rule: `unknown mode "never"`},

		// Reschedule policy.
		{name: "reschedule delay function", mut: func(m obj) { grp(m, 0)["ReschedulePolicy"] = obj{"DelayFunction": "linear"} }, field: gp + ".ReschedulePolicy.DelayFunction", rule: `unknown delay function "linear"`},
		{name: "reschedule delay too short", mut: func(m obj) { grp(m, 0)["ReschedulePolicy"] = obj{"Delay": ns("1s")} }, field: gp + ".ReschedulePolicy.Delay", rule: "must be at least 5s (got 1s)"},
		{name: "reschedule max delay too short", mut: func(m obj) { grp(m, 0)["ReschedulePolicy"] = obj{"Delay": ns("5s"), "MaxDelay": ns("2s")} }, field: gp + ".ReschedulePolicy.MaxDelay", rule: "must be at least 5s"},
		{name: "reschedule max delay below delay", mut: func(m obj) { grp(m, 0)["ReschedulePolicy"] = obj{"Delay": ns("1m"), "MaxDelay": ns("30s")} }, field: gp + ".ReschedulePolicy.MaxDelay", rule: "must be at least the delay (1m0s)"},
		{name: "reschedule unlimited with attempts", mut: func(m obj) {
			grp(m, 0)["ReschedulePolicy"] = obj{"Attempts": 3, "Interval": ns("1h"), "Unlimited": true}
		}, field: gp + ".ReschedulePolicy.Unlimited", rule: "cannot be true when attempts is set"},
		{name: "reschedule attempts without interval", mut: func(m obj) {
			grp(m, 0)["ReschedulePolicy"] = obj{"Attempts": 3, "Interval": 0, "Unlimited": false}
		}, field: gp + ".ReschedulePolicy.Interval", rule: "must be set when attempts is set"},
		{name: "reschedule interval too short", mut: func(m obj) {
			grp(m, 0)["ReschedulePolicy"] = obj{"Attempts": 1, "Interval": ns("10s"), "Unlimited": false, "DelayFunction": "constant"}
		}, field: gp + ".ReschedulePolicy.Interval", rule: "must be at least 15s (got 10s)"},
		{name: "reschedule negative attempts", mut: func(m obj) { grp(m, 0)["ReschedulePolicy"] = obj{"Attempts": -2, "Unlimited": false} }, field: gp + ".ReschedulePolicy.Attempts", rule: "must not be negative"},
		{name: "reschedule constant cannot fit", mut: func(m obj) {
			grp(m, 0)["ReschedulePolicy"] = obj{"Attempts": 10, "Interval": ns("1m"), "Delay": ns("30s"), "DelayFunction": "constant", "Unlimited": false}
		}, field: gp + ".ReschedulePolicy.Interval", rule: "can only make 2 of 10 attempts in 1m0s"},
		{name: "reschedule exponential cannot fit", mut: func(m obj) {
			grp(m, 0)["ReschedulePolicy"] = obj{"Attempts": 5, "Interval": ns("1m"), "Delay": ns("5s"), "DelayFunction": "exponential", "MaxDelay": ns("1h"), "Unlimited": false}
		}, field: gp + ".ReschedulePolicy.Interval", rule: "can only make 4 of 5 attempts"},
		{name: "reschedule fibonacci cannot fit", mut: func(m obj) {
			grp(m, 0)["ReschedulePolicy"] = obj{"Attempts": 7, "Interval": ns("1m"), "Delay": ns("5s"), "DelayFunction": "fibonacci", "MaxDelay": ns("1h"), "Unlimited": false}
		}, field: gp + ".ReschedulePolicy.Interval", rule: "can only make 6 of 7 attempts"},

		// Update strategy.
		{name: "update health check", mut: func(m obj) { jobOf(m)["Update"] = obj{"HealthCheck": "http"} }, field: "Job.Update.HealthCheck", rule: `unknown health check "http"`},
		{name: "update max parallel", mut: func(m obj) { jobOf(m)["Update"] = obj{"MaxParallel": -1} }, field: "Job.Update.MaxParallel", rule: "must not be negative"},
		{name: "update canary", mut: func(m obj) { grp(m, 0)["Update"] = obj{"Canary": -1} }, field: gp + ".Update.Canary", rule: "must not be negative"},
		{name: "update auto promote without canary", mut: func(m obj) { jobOf(m)["Update"] = obj{"AutoPromote": true} }, field: "Job.Update.AutoPromote", rule: "needs canaries"},
		{name: "update min healthy time negative", mut: func(m obj) { jobOf(m)["Update"] = obj{"MinHealthyTime": -1} }, field: "Job.Update.MinHealthyTime", rule: "must not be negative"},
		{name: "update healthy deadline zero", mut: func(m obj) { jobOf(m)["Update"] = obj{"HealthyDeadline": 0} }, field: "Job.Update.HealthyDeadline", rule: "must be greater than zero"},
		{name: "update progress deadline negative", mut: func(m obj) { jobOf(m)["Update"] = obj{"ProgressDeadline": -1} }, field: "Job.Update.ProgressDeadline", rule: "must not be negative"},
		{name: "update min healthy time vs deadline", mut: func(m obj) {
			jobOf(m)["Update"] = obj{"MinHealthyTime": ns("5m"), "HealthyDeadline": ns("5m")}
		}, field: "Job.Update.MinHealthyTime", rule: "must be less than healthy_deadline"},
		{name: "update healthy vs progress deadline", mut: func(m obj) {
			jobOf(m)["Update"] = obj{"HealthyDeadline": ns("10m"), "ProgressDeadline": ns("5m")}
		}, field: "Job.Update.HealthyDeadline", rule: "must be less than progress_deadline"},
		{name: "update stagger", mut: func(m obj) { grp(m, 0)["Update"] = obj{"Stagger": 0} }, field: gp + ".Update.Stagger", rule: "must be greater than zero"},
		{name: "update in batch job", batch: true, mut: func(m obj) { jobOf(m)["Update"] = obj{"MaxParallel": 1} }, field: "Job.Update", rule: "update block is not allowed for batch jobs"},
		{name: "update in batch group", batch: true, mut: func(m obj) { grp(m, 0)["Update"] = obj{} }, field: `Job.TaskGroups[0] "run".Update`, rule: "update block is not allowed for batch jobs"},

		// Migrate strategy.
		{name: "migrate in batch job", batch: true, mut: func(m obj) { jobOf(m)["Migrate"] = obj{} }, field: "Job.Migrate", rule: "migrate block is not allowed for batch jobs"},
		{name: "migrate in batch group", batch: true, mut: func(m obj) { grp(m, 0)["Migrate"] = obj{} }, field: `Job.TaskGroups[0] "run".Migrate`, rule: "migrate block is not allowed for batch jobs"},
		{name: "migrate max parallel", mut: func(m obj) { grp(m, 0)["Migrate"] = obj{"MaxParallel": -1} }, field: gp + ".Migrate.MaxParallel", rule: "must not be negative"},
		{name: "migrate health check", mut: func(m obj) { grp(m, 0)["Migrate"] = obj{"HealthCheck": "manual"} }, field: gp + ".Migrate.HealthCheck", rule: `unknown health check "manual"`},
		{name: "migrate health check missing", mut: func(m obj) { grp(m, 0)["Migrate"] = obj{"HealthCheck": ""} }, field: gp + ".Migrate.HealthCheck", rule: "must be set"},
		{name: "migrate min healthy time", mut: func(m obj) { grp(m, 0)["Migrate"] = obj{"MinHealthyTime": -1} }, field: gp + ".Migrate.MinHealthyTime", rule: "must not be negative"},
		{name: "migrate healthy deadline", mut: func(m obj) { grp(m, 0)["Migrate"] = obj{"HealthyDeadline": -1} }, field: gp + ".Migrate.HealthyDeadline", rule: "must not be negative"},
		{name: "migrate min healthy vs deadline", mut: func(m obj) {
			grp(m, 0)["Migrate"] = obj{"MinHealthyTime": ns("10m"), "HealthyDeadline": ns("5m")}
		}, field: gp + ".Migrate.MinHealthyTime", rule: "must not be longer than healthy_deadline"},

		// Disconnect settings.
		{name: "lost_after negative", mut: func(m obj) { grp(m, 0)["Disconnect"] = obj{"LostAfter": -1} }, field: gp + ".Disconnect.LostAfter", rule: "must not be negative"},
		{name: "stop_on_client_after negative", mut: func(m obj) { grp(m, 0)["Disconnect"] = obj{"StopOnClientAfter": -1} }, field: gp + ".Disconnect.StopOnClientAfter", rule: "must not be negative"},
		{name: "lost_after with stop_on_client_after", mut: func(m obj) {
			grp(m, 0)["Disconnect"] = obj{"LostAfter": ns("1h"), "StopOnClientAfter": ns("1m")}
		}, field: gp + ".Disconnect.StopOnClientAfter", rule: "cannot be set together with lost_after"},
		{name: "lost_after with max_client_disconnect", mut: func(m obj) {
			grp(m, 0)["Disconnect"] = obj{"LostAfter": ns("1h")}
			grp(m, 0)["MaxClientDisconnect"] = ns("1h")
		}, field: gp + ".Disconnect.LostAfter", rule: "deprecated max_client_disconnect"},
		{name: "stop_on_client_after with stop_after_client_disconnect", mut: func(m obj) {
			grp(m, 0)["Disconnect"] = obj{"StopOnClientAfter": ns("1m")}
			grp(m, 0)["StopAfterClientDisconnect"] = ns("1m")
		}, field: gp + ".Disconnect.StopOnClientAfter", rule: "deprecated stop_after_client_disconnect"},
		{name: "replace with prevent_reschedule_on_lost", mut: func(m obj) {
			grp(m, 0)["Disconnect"] = obj{"Replace": false}
			grp(m, 0)["PreventRescheduleOnLost"] = true
		}, field: gp + ".Disconnect.Replace", rule: "deprecated prevent_reschedule_on_lost"},
		{name: "max_client_disconnect with stop_after_client_disconnect", mut: func(m obj) {
			grp(m, 0)["MaxClientDisconnect"] = ns("1h")
			grp(m, 0)["StopAfterClientDisconnect"] = ns("1m")
		}, field: gp + ".StopAfterClientDisconnect", rule: "cannot be set together with max_client_disconnect"},
		{name: "max_client_disconnect negative", mut: func(m obj) { grp(m, 0)["MaxClientDisconnect"] = -1 }, field: gp + ".MaxClientDisconnect", rule: "must not be negative"},
		{name: "stop_after_client_disconnect negative", mut: func(m obj) { grp(m, 0)["StopAfterClientDisconnect"] = -1 }, field: gp + ".StopAfterClientDisconnect", rule: "must not be negative"},
		{name: "prevent reschedule with attempts", batch: true, mut: func(m obj) {
			grp(m, 0)["MaxClientDisconnect"] = ns("1h")
			grp(m, 0)["PreventRescheduleOnLost"] = true
		}, field: `Job.TaskGroups[0] "run".PreventRescheduleOnLost`, rule: "needs a reschedule policy without attempts (got 1)"},
		{name: "replace false with attempts", batch: true, mut: func(m obj) {
			grp(m, 0)["Disconnect"] = obj{"LostAfter": ns("1h"), "Replace": false}
		}, field: `Job.TaskGroups[0] "run".PreventRescheduleOnLost`, rule: "needs a reschedule policy without attempts (got 1)"},
		{name: "reconcile unsupported", mut: func(m obj) { grp(m, 0)["Disconnect"] = obj{"Reconcile": "keep_original"} }, field: gp + ".Disconnect.Reconcile", rule: `reconcile = "keep_original" is not supported by drover yet`},
		{name: "reconcile unknown", mut: func(m obj) { grp(m, 0)["Disconnect"] = obj{"Reconcile": "coin_flip"} }, field: gp + ".Disconnect.Reconcile", rule: `unknown reconcile option "coin_flip"`},

		// Constraints.
		{name: "constraint operand unknown", mut: func(m obj) { jobOf(m)["Constraints"] = list(constraint("${attr.kernel.name}", "~", "linux")) }, field: "Job.Constraints[0].Operand", rule: `unknown operator "~"`},
		{name: "constraint operand empty", mut: func(m obj) { jobOf(m)["Constraints"] = list(constraint("${attr.kernel.name}", "", "linux")) }, field: "Job.Constraints[0].Operand", rule: "is required"},
		{name: "constraint needs value", mut: func(m obj) { grp(m, 0)["Constraints"] = list(constraint("${attr.kernel.name}", "!=", "")) }, field: gp + ".Constraints[0].RTarget", rule: `is required by operator "!="`},
		{name: "constraint needs attribute", mut: func(m obj) { jobOf(m)["Constraints"] = list(constraint("", "=", "linux")) }, field: "Job.Constraints[0].LTarget", rule: "is required"},
		{name: "constraint regexp", mut: func(m obj) { tsk(m, 0, 0)["Constraints"] = list(constraint("${attr.os.name}", "regexp", "ubuntu(")) }, field: tp + ".Constraints[0].RTarget", rule: "must be a valid regular expression"},
		{name: "constraint version", mut: func(m obj) { jobOf(m)["Constraints"] = list(constraint("${attr.kernel.version}", "version", "newest")) }, field: "Job.Constraints[0].RTarget", rule: "must be a valid version constraint"},
		{name: "constraint semver", mut: func(m obj) { jobOf(m)["Constraints"] = list(constraint("${attr.nomad.version}", "semver", "~> 1.2")) }, field: "Job.Constraints[0].RTarget", rule: "must be a valid semver constraint"},
		{name: "constraint set_contains", mut: func(m obj) { jobOf(m)["Constraints"] = list(constraint("${meta.tags}", "set_contains", "")) }, field: "Job.Constraints[0].RTarget", rule: `is required by operator "set_contains"`},
		{name: "constraint set_contains_any", mut: func(m obj) { jobOf(m)["Constraints"] = list(constraint("${meta.tags}", "set_contains_any", "")) }, field: "Job.Constraints[0].RTarget", rule: `is required by operator "set_contains_any"`},
		{name: "constraint is_set value", mut: func(m obj) { jobOf(m)["Constraints"] = list(constraint("${meta.rack}", "is_set", "yes")) }, field: "Job.Constraints[0].RTarget", rule: `must be empty for operator "is_set"`},
		{name: "constraint distinct_property count", mut: func(m obj) { grp(m, 0)["Constraints"] = list(constraint("${meta.rack}", "distinct_property", "0")) }, field: gp + ".Constraints[0].RTarget", rule: "at least 1 allocation"},
		{name: "constraint distinct_property not a number", mut: func(m obj) { grp(m, 0)["Constraints"] = list(constraint("${meta.rack}", "distinct_property", "two")) }, field: gp + ".Constraints[0].RTarget", rule: "number of allocations"},
		{name: "constraint distinct_hosts value", mut: func(m obj) { grp(m, 0)["Constraints"] = list(constraint("", "distinct_hosts", "maybe")) }, field: gp + ".Constraints[0].RTarget", rule: `"true" or "false"`},
		{name: "constraint distinct_hosts on task", mut: func(m obj) { tsk(m, 0, 0)["Constraints"] = list(constraint("", "distinct_hosts", "true")) }, field: tp + ".Constraints[0].Operand", rule: "only allowed on a job or group"},
		{name: "constraint distinct_property on task", mut: func(m obj) { tsk(m, 0, 0)["Constraints"] = list(constraint("${meta.rack}", "distinct_property", "")) }, field: tp + ".Constraints[0].Operand", rule: "only allowed on a job or group"},
		{name: "constraint attribute brace", mut: func(m obj) { jobOf(m)["Constraints"] = list(constraint("${attr.kernel.name", "=", "linux")) }, field: "Job.Constraints[0].LTarget", rule: "missing the closing brace"},
		{name: "constraint attribute unknown", mut: func(m obj) { jobOf(m)["Constraints"] = list(constraint("${job.name}", "=", "x")) }, field: "Job.Constraints[0].LTarget", rule: "is not an attribute a node has"},
		{name: "constraint null", mut: func(m obj) { jobOf(m)["Constraints"] = list(nil) }, field: "Job.Constraints[0]", rule: "must not be null"},

		// Unsupported blocks, job level.
		// Affinities and spreads.
		{name: "affinity operator unknown", mut: func(m obj) { jobOf(m)["Affinities"] = list(affinity("${node.class}", "~", "x", 50)) },
			field: "Job.Affinities[0].Operand", rule: `unknown affinity operator "~"`},
		{name: "affinity operator distinct_hosts", mut: func(m obj) { jobOf(m)["Affinities"] = list(affinity("", "distinct_hosts", "true", 50)) },
			field: "Job.Affinities[0].Operand", rule: `unknown affinity operator "distinct_hosts"`},
		{name: "affinity operator missing", mut: func(m obj) { jobOf(m)["Affinities"] = list(affinity("${node.class}", "", "x", 50)) },
			field: "Job.Affinities[0].Operand", rule: "is required"},
		{name: "affinity attribute missing", mut: func(m obj) { jobOf(m)["Affinities"] = list(affinity("", "=", "x", 50)) },
			field: "Job.Affinities[0].LTarget", rule: "is required"},
		{name: "affinity value missing", mut: func(m obj) { jobOf(m)["Affinities"] = list(affinity("${node.class}", "=", "", 50)) },
			field: "Job.Affinities[0].RTarget", rule: "is required"},
		{name: "affinity regexp", mut: func(m obj) { jobOf(m)["Affinities"] = list(affinity("${node.class}", "regexp", "(", 50)) },
			field: "Job.Affinities[0].RTarget", rule: "valid regular expression"},
		{name: "affinity weight zero", mut: func(m obj) { jobOf(m)["Affinities"] = list(affinity("${node.class}", "=", "x", 0)) },
			field: "Job.Affinities[0].Weight", rule: "must not be 0"},
		{name: "affinity weight high", mut: func(m obj) { jobOf(m)["Affinities"] = list(affinity("${node.class}", "=", "x", 101)) },
			field: "Job.Affinities[0].Weight", rule: "must be between -100 and 100 (got 101)"},
		{name: "affinity weight low", mut: func(m obj) { jobOf(m)["Affinities"] = list(affinity("${node.class}", "=", "x", -120)) },
			field: "Job.Affinities[0].Weight", rule: "must be between -100 and 100 (got -120)"},
		{name: "affinity null", mut: func(m obj) { jobOf(m)["Affinities"] = list(nil) }, field: "Job.Affinities[0]", rule: "must not be null"},
		{name: "affinity in a system job", mut: func(m obj) {
			jobOf(m)["Type"] = "system"
			jobOf(m)["Affinities"] = list(affinity("${node.class}", "=", "x", 50))
		}, field: "Job.Affinities", rule: "not allowed in system jobs"},
		{name: "spread attribute missing", mut: func(m obj) { jobOf(m)["Spreads"] = list(obj{"Weight": 50}) },
			field: "Job.Spreads[0].Attribute", rule: "is required"},
		{name: "spread attribute unknown", mut: func(m obj) { jobOf(m)["Spreads"] = list(obj{"Attribute": "${job.name}", "Weight": 50}) },
			field: "Job.Spreads[0].Attribute", rule: "is not an attribute a node has"},
		{name: "spread weight zero", mut: func(m obj) { jobOf(m)["Spreads"] = list(obj{"Attribute": "${node.datacenter}", "Weight": 0}) },
			field: "Job.Spreads[0].Weight", rule: "must be between 1 and 100 (got 0)"},
		{name: "spread weight high", mut: func(m obj) { jobOf(m)["Spreads"] = list(obj{"Attribute": "${node.datacenter}", "Weight": 120}) },
			field: "Job.Spreads[0].Weight", rule: "must be between 1 and 100 (got 120)"},
		{name: "spread percent sum", mut: func(m obj) {
			jobOf(m)["Spreads"] = list(obj{"Attribute": "${node.datacenter}", "SpreadTarget": list(obj{"Value": "dc1", "Percent": 70}, obj{"Value": "dc2", "Percent": 40})})
		}, field: "Job.Spreads[0].SpreadTarget", rule: "must sum to at most 100 (got 110)"},
		{name: "spread percent high", mut: func(m obj) {
			jobOf(m)["Spreads"] = list(obj{"Attribute": "${node.datacenter}", "SpreadTarget": list(obj{"Value": "dc1", "Percent": 150})})
		}, field: "Job.Spreads[0].SpreadTarget[0].Percent", rule: "must be between 0 and 100 (got 150)"},
		{name: "spread target duplicate", mut: func(m obj) {
			jobOf(m)["Spreads"] = list(obj{"Attribute": "${node.datacenter}", "SpreadTarget": list(obj{"Value": "dc1", "Percent": 20}, obj{"Value": "dc1", "Percent": 20})})
		}, field: "Job.Spreads[0].SpreadTarget[1].Value", rule: `target "dc1" is already defined`},
		{name: "spread target value empty", mut: func(m obj) {
			jobOf(m)["Spreads"] = list(obj{"Attribute": "${node.datacenter}", "SpreadTarget": list(obj{"Percent": 20})})
		}, field: "Job.Spreads[0].SpreadTarget[0].Value", rule: "must not be empty"},
		{name: "spread null", mut: func(m obj) { jobOf(m)["Spreads"] = list(nil) }, field: "Job.Spreads[0]", rule: "must not be null"},
		{name: "spread in a sysbatch job", batch: true, mut: func(m obj) {
			jobOf(m)["Type"] = "sysbatch"
			jobOf(m)["Spreads"] = list(obj{"Attribute": "${node.datacenter}"})
		}, field: "Job.Spreads", rule: "not allowed in sysbatch jobs"},
		{name: "multiregion", mut: func(m obj) { jobOf(m)["Multiregion"] = obj{"Regions": list(obj{"Name": "eu"})} }, field: jp, rule: "multiregion block is not supported"},
		{name: "periodic on a service job", mut: func(m obj) { jobOf(m)["Periodic"] = obj{"Spec": "@daily"} }, field: "Job.Periodic", rule: `periodic can only be used with "batch" or "sysbatch" jobs`},
		{name: "periodic bad cron", batch: true, mut: func(m obj) { jobOf(m)["Periodic"] = obj{"Spec": "*/5 * * *"} }, field: "Job.Periodic.Spec", rule: `invalid cron expression "*/5 * * *"`},
		{name: "periodic bad crons", batch: true, mut: func(m obj) { jobOf(m)["Periodic"] = obj{"Specs": list("@daily", "61 * * * *")} }, field: "Job.Periodic.Specs[1]", rule: `invalid cron expression "61 * * * *"`},
		{name: "periodic cron and crons", batch: true, mut: func(m obj) { jobOf(m)["Periodic"] = obj{"Spec": "@daily", "Specs": list("@hourly")} }, field: "Job.Periodic.Spec", rule: "only one of cron and crons"},
		{name: "periodic no cron", batch: true, mut: func(m obj) { jobOf(m)["Periodic"] = obj{"ProhibitOverlap": true} }, field: "Job.Periodic.Spec", rule: "must specify a cron expression"},
		{name: "periodic time zone", batch: true, mut: func(m obj) { jobOf(m)["Periodic"] = obj{"Spec": "@daily", "TimeZone": "Mars/Olympus"} }, field: "Job.Periodic.TimeZone", rule: `unknown time zone "Mars/Olympus"`},
		{name: "periodic spec type", batch: true, mut: func(m obj) { jobOf(m)["Periodic"] = obj{"Spec": "@daily", "SpecType": "test"} }, field: "Job.Periodic.SpecType", rule: `unknown periodic spec type "test"`},
		{name: "parameterized on a service job", mut: func(m obj) { jobOf(m)["ParameterizedJob"] = obj{"Payload": "optional"} }, field: "Job.ParameterizedJob", rule: "parameterized can only be used with"},
		{name: "parameterized payload mode", batch: true, mut: func(m obj) { jobOf(m)["ParameterizedJob"] = obj{"Payload": "sometimes"} }, field: "Job.ParameterizedJob.Payload", rule: `unknown payload requirement "sometimes"`},
		{name: "parameterized meta both", batch: true, mut: func(m obj) {
			jobOf(m)["ParameterizedJob"] = obj{"MetaRequired": list("a", "b"), "MetaOptional": list("b")}
		}, field: "Job.ParameterizedJob.MetaOptional", rule: "both required and optional: b"},
		{name: "ui", mut: func(m obj) { jobOf(m)["UI"] = obj{"Description": "web"} }, field: jp, rule: "ui block is not supported"},
		{name: "dispatched", mut: func(m obj) { jobOf(m)["Dispatched"] = true }, field: "Job.Dispatched", rule: "set by the server on the children"},
		{name: "dispatch idempotency token", mut: func(m obj) { jobOf(m)["DispatchIdempotencyToken"] = "t" }, field: "Job.DispatchIdempotencyToken", rule: "set by the server on the children"},
		{name: "payload", mut: func(m obj) { jobOf(m)["Payload"] = "aGVsbG8=" }, field: "Job.Payload", rule: "set by the server on the children"},
		{name: "parent ID", mut: func(m obj) { jobOf(m)["ParentID"] = "cron-parent" }, field: "Job.ParentID", rule: "set by the server on the children"},
		{name: "consul namespace", mut: func(m obj) { jobOf(m)["ConsulNamespace"] = "team" }, field: "Job.ConsulNamespace", rule: "Consul integration is not supported"},
		{name: "vault namespace", mut: func(m obj) { jobOf(m)["VaultNamespace"] = "team" }, field: "Job.VaultNamespace", rule: "Vault integration is not supported"},
		{name: "version tag", mut: func(m obj) { jobOf(m)["VersionTag"] = obj{"Name": "v1"} }, field: "Job.VersionTag", rule: "version tags are not supported"},

		// Unsupported blocks, group level.
		{name: "group affinity weight", mut: func(m obj) { grp(m, 0)["Affinities"] = list(affinity("${node.class}", "=", "x", 0)) },
			field: gp + ".Affinities[0].Weight", rule: "must not be 0"},
		{name: "group spread weight", mut: func(m obj) { grp(m, 0)["Spreads"] = list(obj{"Attribute": "${node.datacenter}", "Weight": -5}) },
			field: gp + ".Spreads[0].Weight", rule: "must be between 1 and 100 (got -5)"},
		{name: "group volume csi", mut: func(m obj) { grp(m, 0)["Volumes"] = obj{"data": obj{"Type": "csi", "Source": "ebs"}} }, field: gp + ".Volumes.data.Type", rule: "csi volume block is not supported by drover"},
		{name: "group volume type", mut: func(m obj) { grp(m, 0)["Volumes"] = obj{"data": obj{"Type": "nfs", "Source": "x"}} }, field: gp + ".Volumes.data.Type", rule: `unrecognized type "nfs"`},
		{name: "group volume source", mut: func(m obj) { grp(m, 0)["Volumes"] = obj{"data": obj{"Type": "host"}} }, field: gp + ".Volumes.data.Source", rule: "empty source"},
		{name: "group volume per_alloc", mut: func(m obj) { grp(m, 0)["Volumes"] = obj{"data": obj{"Type": "host", "Source": "d", "PerAlloc": true}} }, field: gp + ".Volumes.data.PerAlloc", rule: "not supported by drover yet"},
		{name: "network mode bridge", mut: func(m obj) { grp(m, 0)["Networks"] = list(obj{"Mode": "bridge"}) }, field: gp + ".Networks[0].Mode", rule: `network mode "bridge" needs every task of the group on a driver that runs it in the group's network namespace (docker), but task "server" (Tasks[0]) uses "raw_exec", which drover cannot run in one yet`},
		{name: "network bridge hostname", mut: func(m obj) { grp(m, 0)["Networks"] = list(obj{"Mode": "bridge", "Hostname": "web_1"}) }, field: gp + ".Networks[0].Hostname", rule: `must be a valid host name`},
		{name: "network mode cni", mut: func(m obj) { grp(m, 0)["Networks"] = list(obj{"Mode": "cni/mynet"}) }, field: gp + ".Networks[0].Mode", rule: `network mode "cni/mynet" is not supported`},
		{name: "network mode unknown", mut: func(m obj) { grp(m, 0)["Networks"] = list(obj{"Mode": "hots"}) }, field: gp + ".Networks[0].Mode", rule: `unknown network mode "hots"`},
		{name: "network dns", mut: func(m obj) { grp(m, 0)["Networks"] = list(obj{"DNS": obj{"Servers": list("1.1.1.1")}}) }, field: gp + ".Networks[0].DNS", rule: "a dns block is only supported in bridge networking by drover"},
		{name: "network cni block", mut: func(m obj) { grp(m, 0)["Networks"] = list(obj{"CNI": obj{"Args": obj{"a": "b"}}}) }, field: gp + ".Networks[0]", rule: "cni block is not supported"},
		{name: "network null", mut: func(m obj) { grp(m, 0)["Networks"] = list(nil) }, field: gp + ".Networks[0]", rule: "must not be null"},
		{name: "two networks", mut: func(m obj) { grp(m, 0)["Networks"] = list(obj{"Mode": "host"}, obj{"Mode": "host"}) }, field: gp + ".Networks", rule: "at most one network block per group"},
		{name: "network hostname", mut: func(m obj) { grp(m, 0)["Networks"] = list(obj{"Hostname": "web"}) }, field: gp + ".Networks[0].Hostname", rule: "only set in bridge networking"},
		{name: "network ip", mut: func(m obj) { grp(m, 0)["Networks"] = list(obj{"IP": "10.0.0.1"}) }, field: gp + ".Networks[0].IP", rule: "is the node's"},
		{name: "port label empty", mut: func(m obj) { grp(m, 0)["Networks"] = list(obj{"DynamicPorts": list(obj{"Label": ""})}) },
			field: gp + ".Networks[0].DynamicPorts[0].Label", rule: "must not be empty"},
		{name: "port label invalid", mut: func(m obj) { grp(m, 0)["Networks"] = list(obj{"DynamicPorts": list(obj{"Label": "my port"})}) },
			field: gp + `.Networks[0].DynamicPorts[0] "my port".Label`, rule: "letters, digits, underscores or dashes"},
		{name: "port label duplicate", mut: func(m obj) {
			grp(m, 0)["Networks"] = list(obj{"ReservedPorts": list(obj{"Label": "http", "Value": 8080}), "DynamicPorts": list(obj{"Label": "http"})})
		}, field: gp + `.Networks[0].DynamicPorts[0] "http".Label`, rule: `port label "http" is already used by`},
		{name: "static port zero", mut: func(m obj) { grp(m, 0)["Networks"] = list(obj{"ReservedPorts": list(obj{"Label": "http"})}) },
			field: gp + `.Networks[0].ReservedPorts[0] "http".Value`, rule: "static port must be between 1 and 65535 (got 0)"},
		{name: "static port too high", mut: func(m obj) {
			grp(m, 0)["Networks"] = list(obj{"ReservedPorts": list(obj{"Label": "http", "Value": 70000})})
		},
			field: gp + `.Networks[0].ReservedPorts[0] "http".Value`, rule: "static port must be between 1 and 65535 (got 70000)"},
		{name: "static port duplicate", mut: func(m obj) {
			grp(m, 0)["Networks"] = list(obj{"ReservedPorts": list(obj{"Label": "a", "Value": 80}, obj{"Label": "b", "Value": 80})})
		}, field: gp + `.Networks[0].ReservedPorts[1] "b".Value`, rule: "static port 80 is already reserved by"},
		{name: "dynamic port with a value", mut: func(m obj) {
			grp(m, 0)["Networks"] = list(obj{"DynamicPorts": list(obj{"Label": "http", "Value": 20001})})
		},
			field: gp + `.Networks[0].DynamicPorts[0] "http".Value`, rule: "must be 0 for a dynamic port"},
		{name: "port to negative", mut: func(m obj) { grp(m, 0)["Networks"] = list(obj{"DynamicPorts": list(obj{"Label": "http", "To": -2})}) },
			field: gp + `.Networks[0].DynamicPorts[0] "http".To`, rule: "must be between -1 and 65535 (got -2)"},
		{name: "port host network", mut: func(m obj) {
			grp(m, 0)["Networks"] = list(obj{"DynamicPorts": list(obj{"Label": "http", "HostNetwork": "public"})})
		},
			field: gp + `.Networks[0].DynamicPorts[0] "http".HostNetwork`, rule: `host network "public" is not supported`},
		{name: "port ignore collision", mut: func(m obj) {
			grp(m, 0)["Networks"] = list(obj{"ReservedPorts": list(obj{"Label": "dns", "Value": 53, "IgnoreCollision": true})})
		}, field: gp + `.Networks[0].ReservedPorts[0] "dns".IgnoreCollision`, rule: "ignore_collision is not supported"},
		{name: "group scaling no max", mut: func(m obj) { grp(m, 0)["Scaling"] = obj{"Min": 1} }, field: gp + ".Scaling.Max", rule: "maximum count must be specified"},
		{name: "group scaling max below min", mut: func(m obj) { grp(m, 0)["Scaling"] = obj{"Min": 5, "Max": 2} }, field: gp + ".Scaling.Max", rule: "must not be less than minimum count (2 < 5)"},
		{name: "group scaling count above max", mut: func(m obj) { grp(m, 0)["Count"] = 9; grp(m, 0)["Scaling"] = obj{"Min": 1, "Max": 4} }, field: gp + ".Count", rule: "must not be greater than maximum count in scaling policy (9 > 4)"},
		{name: "group scaling count below min", mut: func(m obj) { grp(m, 0)["Count"] = 1; grp(m, 0)["Scaling"] = obj{"Min": 3, "Max": 4} }, field: gp + ".Count", rule: "must not be less than minimum count in scaling policy (1 < 3)"},
		{name: "group scaling vertical", mut: func(m obj) { grp(m, 0)["Scaling"] = obj{"Max": 4, "Type": "vertical_cpu"} }, field: gp + ".Scaling.Type", rule: `"vertical_cpu" is not supported on a group`},
		{name: "group consul", mut: func(m obj) { grp(m, 0)["Consul"] = obj{"Namespace": "x"} }, field: gp, rule: "consul block is not supported"},
		{name: "group max_run_duration in a service job", mut: func(m obj) { grp(m, 0)["MaxRunDuration"] = ns("1h") }, field: gp + ".MaxRunDuration", rule: `job type "service" does not allow max_run_duration`},
		{name: "group max_run_duration zero", batch: true, mut: func(m obj) { grp(m, 0)["MaxRunDuration"] = 0 }, field: `Job.TaskGroups[0] "run".MaxRunDuration`, rule: "must be greater than zero"},

		// Unsupported blocks, task level.
		{name: "task affinity operator", mut: func(m obj) {
			tsk(m, 0, 0)["Affinities"] = list(affinity("${node.class}", "distinct_property", "x", 10))
		},
			field: tp + ".Affinities[0].Operand", rule: `unknown affinity operator "distinct_property"`},
		// Artifacts.
		{name: "artifact no source", mut: func(m obj) { tsk(m, 0, 0)["Artifacts"] = list(obj{"RelativeDest": "local/"}) }, field: tp + ".Artifacts[0].GetterSource", rule: "must be set"},
		{name: "artifact s3", mut: func(m obj) {
			tsk(m, 0, 0)["Artifacts"] = list(obj{"GetterSource": "s3::https://bucket.s3.amazonaws.com/x"})
		}, field: tp + ".Artifacts[0].GetterSource", rule: `the "s3" getter is not supported`},
		{name: "artifact scheme", mut: func(m obj) { tsk(m, 0, 0)["Artifacts"] = list(obj{"GetterSource": "ftp://host/x"}) }, field: tp + ".Artifacts[0].GetterSource", rule: "must be an http or https URL"},
		{name: "artifact mode", mut: func(m obj) {
			tsk(m, 0, 0)["Artifacts"] = list(obj{"GetterSource": "https://h/x", "GetterMode": "tree"})
		}, field: tp + ".Artifacts[0].GetterMode", rule: `unknown artifact mode "tree"`},
		{name: "artifact destination", mut: func(m obj) {
			tsk(m, 0, 0)["Artifacts"] = list(obj{"GetterSource": "https://h/x", "RelativeDest": "../../../bin"})
		}, field: tp + ".Artifacts[0].RelativeDest", rule: "must stay inside the allocation directory"},
		{name: "artifact checksum form", mut: func(m obj) {
			tsk(m, 0, 0)["Artifacts"] = list(obj{"GetterSource": "https://h/x", "GetterOptions": obj{"checksum": "abc"}})
		}, field: tp + ".Artifacts[0].GetterOptions.checksum", rule: `"type:value"`},
		{name: "artifact checksum type", mut: func(m obj) {
			tsk(m, 0, 0)["Artifacts"] = list(obj{"GetterSource": "https://h/x", "GetterOptions": obj{"checksum": "crc:00"}})
		}, field: tp + ".Artifacts[0].GetterOptions.checksum", rule: "unsupported checksum type crc"},
		{name: "artifact checksum length", mut: func(m obj) {
			tsk(m, 0, 0)["Artifacts"] = list(obj{"GetterSource": "https://h/x", "GetterOptions": obj{"checksum": "sha256:abcd"}})
		}, field: tp + ".Artifacts[0].GetterOptions.checksum", rule: "invalid sha256 checksum"},
		{name: "artifact chown", mut: func(m obj) { tsk(m, 0, 0)["Artifacts"] = list(obj{"GetterSource": "https://h/x", "Chown": true}) }, field: tp + ".Artifacts[0].Chown", rule: "not supported"},
		{name: "vault", mut: func(m obj) { tsk(m, 0, 0)["Vault"] = obj{"Policies": list("p")} }, field: tp, rule: "vault block is not supported"},
		{name: "task consul", mut: func(m obj) { tsk(m, 0, 0)["Consul"] = obj{} }, field: tp, rule: "consul block is not supported"},
		// Templates.
		{name: "template consul", mut: func(m obj) { tsk(m, 0, 0)["Templates"] = list(tmpl("local/app.conf", `{{ key "app/port" }}`)) }, field: tp + ".Templates[0].EmbeddedTmpl", rule: `template for "local/app.conf" calls key, which reads Consul`},
		{name: "template vault", mut: func(m obj) {
			tsk(m, 0, 0)["Templates"] = list(tmpl("secrets/db", `{{ with secret "db/creds" }}{{ .Data.password }}{{ end }}`))
		}, field: tp + ".Templates[0].EmbeddedTmpl", rule: "calls secret, which reads Vault"},
		{name: "template parse", mut: func(m obj) { tsk(m, 0, 0)["Templates"] = list(tmpl("local/x", `{{ nosuch }}`)) }, field: tp + ".Templates[0].EmbeddedTmpl", rule: `function "nosuch" not defined`},
		{name: "template nothing", mut: func(m obj) { tsk(m, 0, 0)["Templates"] = list(obj{"DestPath": "local/x"}) }, field: tp + ".Templates[0]", rule: "must have a source or data"},
		{name: "template both", mut: func(m obj) {
			tsk(m, 0, 0)["Templates"] = list(obj{"DestPath": "local/x", "EmbeddedTmpl": "x", "SourcePath": "local/in.tpl"})
		}, field: tp + ".Templates[0]", rule: "not have both a source and data"},
		{name: "template no destination", mut: func(m obj) { tsk(m, 0, 0)["Templates"] = list(obj{"EmbeddedTmpl": "x"}) }, field: tp + ".Templates[0].DestPath", rule: "must be set"},
		{name: "template destination escapes", mut: func(m obj) { tsk(m, 0, 0)["Templates"] = list(tmpl("../../etc/passwd", "x")) }, field: tp + ".Templates[0].DestPath", rule: "must stay inside the allocation directory"},
		{name: "template source escapes", mut: func(m obj) {
			tsk(m, 0, 0)["Templates"] = list(obj{"DestPath": "local/x", "SourcePath": "../../../etc/shadow"})
		}, field: tp + ".Templates[0].SourcePath", rule: "must stay inside the allocation directory"},
		{name: "template same destination", mut: func(m obj) { tsk(m, 0, 0)["Templates"] = list(tmpl("local/x", "a"), tmpl("./local/x", "b")) }, field: tp + ".Templates[1].DestPath", rule: "also the destination of Templates[0]"},
		{name: "template change_mode script", mut: func(m obj) {
			tsk(m, 0, 0)["Templates"] = list(obj{"DestPath": "local/x", "EmbeddedTmpl": "x", "ChangeMode": "script", "ChangeScript": obj{"Command": "/bin/true"}})
		}, field: tp + ".Templates[0].ChangeMode", rule: `change_mode "script" is not supported by drover yet`},
		{name: "template change_mode unknown", mut: func(m obj) {
			tsk(m, 0, 0)["Templates"] = list(obj{"DestPath": "local/x", "EmbeddedTmpl": "x", "ChangeMode": "reload"})
		}, field: tp + ".Templates[0].ChangeMode", rule: `unknown change_mode "reload"`},
		{name: "template signal unknown", mut: func(m obj) {
			tsk(m, 0, 0)["Templates"] = list(obj{"DestPath": "local/x", "EmbeddedTmpl": "x", "ChangeMode": "signal", "ChangeSignal": "SIGNOPE"})
		}, field: tp + ".Templates[0].ChangeSignal", rule: `unknown signal "SIGNOPE"`},
		{name: "template signal with env", mut: func(m obj) {
			tsk(m, 0, 0)["Templates"] = list(obj{"DestPath": "local/x", "EmbeddedTmpl": "X=1", "ChangeMode": "signal", "Envvars": true})
		}, field: tp + ".Templates[0].ChangeMode", rule: "env = true"},
		{name: "template perms", mut: func(m obj) {
			tsk(m, 0, 0)["Templates"] = list(obj{"DestPath": "local/x", "EmbeddedTmpl": "x", "Perms": "rw-r--r--"})
		}, field: tp + ".Templates[0].Perms", rule: "octal file mode"},
		{name: "template splay", mut: func(m obj) {
			tsk(m, 0, 0)["Templates"] = list(obj{"DestPath": "local/x", "EmbeddedTmpl": "x", "Splay": -1})
		}, field: tp + ".Templates[0].Splay", rule: "must not be negative"},
		{name: "template wait", mut: func(m obj) {
			tsk(m, 0, 0)["Templates"] = list(obj{"DestPath": "local/x", "EmbeddedTmpl": "x", "Wait": obj{"Min": ns("10s"), "Max": ns("2s")}})
		}, field: tp + ".Templates[0].Wait", rule: "must not be greater than max"},
		{name: "dispatch_payload escapes", mut: func(m obj) { tsk(m, 0, 0)["DispatchPayload"] = obj{"File": "../../../etc/x"} }, field: tp + ".DispatchPayload.File", rule: "escapes the allocation directory"},
		{name: "dispatch_payload no file", mut: func(m obj) { tsk(m, 0, 0)["DispatchPayload"] = obj{} }, field: tp + ".DispatchPayload.File", rule: "must name the file"},
		{name: "volume_mount unknown volume", mut: func(m obj) { tsk(m, 0, 0)["VolumeMounts"] = list(obj{"Volume": "data", "Destination": "/data"}) }, field: tp + ".VolumeMounts[0].Volume", rule: `names volume "data", which the group does not define`},
		{name: "volume_mount destination", mut: func(m obj) {
			grp(m, 0)["Volumes"] = obj{"data": obj{"Type": "host", "Source": "d"}}
			tsk(m, 0, 0)["VolumeMounts"] = list(obj{"Volume": "data"})
		}, field: tp + ".VolumeMounts[0].Destination", rule: "must be set"},
		{name: "volume_mount propagation", mut: func(m obj) {
			grp(m, 0)["Volumes"] = obj{"data": obj{"Type": "host", "Source": "d"}}
			tsk(m, 0, 0)["VolumeMounts"] = list(obj{"Volume": "data", "Destination": "/d", "PropagationMode": "bidirectional"})
		}, field: tp + ".VolumeMounts[0].PropagationMode", rule: `"bidirectional" is not supported`},
		{name: "csi_plugin", mut: func(m obj) { tsk(m, 0, 0)["CSIPluginConfig"] = obj{"ID": "ebs", "Type": "node"} }, field: tp, rule: "csi_plugin block is not supported"},
		{name: "task scaling", mut: func(m obj) { tsk(m, 0, 0)["ScalingPolicies"] = list(obj{"Type": "vertical_cpu"}) }, field: tp, rule: "scaling block is not supported"},
		{name: "secret", mut: func(m obj) { tsk(m, 0, 0)["Secrets"] = list(obj{"Name": "db", "Provider": "vault"}) }, field: tp, rule: "secret block is not supported"},
		{name: "identity", mut: func(m obj) { tsk(m, 0, 0)["Identity"] = obj{"Env": true} }, field: tp, rule: "identity block is not supported"},
		{name: "identities", mut: func(m obj) { tsk(m, 0, 0)["Identities"] = list(obj{"Name": "vault_default"}) }, field: tp, rule: "identity block is not supported"},
		{name: "action", mut: func(m obj) { tsk(m, 0, 0)["Actions"] = list(obj{"Name": "ping", "Command": "/bin/true"}) }, field: tp, rule: "action block is not supported"},
		{name: "schedule", mut: func(m obj) { tsk(m, 0, 0)["Schedule"] = obj{"Cron": obj{"Start": "0 9 * * *"}} }, field: tp, rule: "schedule block is not supported"},
		{name: "connect kind", mut: func(m obj) { tsk(m, 0, 0)["Kind"] = "connect-proxy:web" }, field: tp + ".Kind", rule: "Consul Connect"},
		{name: "task network", mut: func(m obj) { tsk(m, 0, 0)["Resources"] = obj{"Networks": list(obj{"MBits": 10})} }, field: tp + ".Resources", rule: "network block is not supported by drover yet"},
		{name: "device", mut: func(m obj) { tsk(m, 0, 0)["Resources"] = obj{"Devices": list(obj{"Name": "nvidia/gpu"})} }, field: tp + ".Resources", rule: "device block is not supported"},
		{name: "numa", mut: func(m obj) { tsk(m, 0, 0)["Resources"] = obj{"NUMA": obj{"Affinity": "require"}} }, field: tp + ".Resources", rule: "numa block is not supported"},
		{name: "cores", mut: func(m obj) { tsk(m, 0, 0)["Resources"] = obj{"Cores": 2} }, field: tp + ".Resources.Cores", rule: "reserving cores is not supported"},
		{name: "secrets size", mut: func(m obj) { tsk(m, 0, 0)["Resources"] = obj{"SecretsMB": 5} }, field: tp + ".Resources.SecretsMB", rule: "not supported"},
		{name: "keys differing in case", mut: func(m obj) { grp(m, 0)["tasks"] = grp(m, 0)["Tasks"] }, field: "Job.TaskGroups[0].Tasks", rule: `given twice, as "Tasks" and "tasks"`},
		{name: "job keys differing in case", mut: func(m obj) { jobOf(m)["id"] = "other" }, field: "Job.ID", rule: `given twice, as "ID" and "id"`},
		{name: "iops", mut: func(m obj) { tsk(m, 0, 0)["Resources"] = obj{"IOPS": 5} }, field: tp + ".Resources.IOPS", rule: "not supported"},
	}

	seen := make(map[string]bool)
	for _, c := range cases {
		if seen[c.name] {
			t.Fatalf("duplicate case name %q", c.name)
		}
		seen[c.name] = true
		t.Run(c.name, func(t *testing.T) {
			body := c.body
			if body == "" {
				base := minimalService
				if c.batch {
					base = minimalBatchOneGroup
				}
				m := baseBody(t, base)
				c.mut(m)
				b, err := json.Marshal(m)
				if err != nil {
					t.Fatal(err)
				}
				body = string(b)
			}
			req, err := DecodeRegisterRequest(strings.NewReader(body))
			if err == nil {
				t.Fatalf("accepted %s\njob: %+v", body, req.Job)
			}
			assertError(t, err, c.field, c.rule)
		})
	}
}

func tmpl(dest, data string) obj { return obj{"DestPath": dest, "EmbeddedTmpl": data} }

const minimalBatchOneGroup = `{"Job": {
	"ID": "report",
	"Type": "batch",
	"TaskGroups": [{
		"Name": "run",
		"Tasks": [{"Name": "main", "Driver": "raw_exec", "Config": {"command": "/bin/true"}}]
	}]
}}`

// The minimal jobs the table starts from are valid.
func TestBadInputBasesAreValid(t *testing.T) {
	decode(t, minimalService)
	decode(t, minimalBatchOneGroup)
}
