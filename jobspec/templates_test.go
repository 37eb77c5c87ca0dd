package jobspec

import (
	"testing"
	"time"
)

// TestTemplateDefaults: a template block decodes with Nomad's defaults
// (change_mode restart, splay 5s, perms 0644, {{ }} delimiters), and
// the functions that need neither Consul nor Vault pass the check.
func TestTemplateDefaults(t *testing.T) {
	req := decode(t, `{"Job": {"ID": "web", "TaskGroups": [{"Name": "web", "Tasks": [{
		"Name": "server", "Driver": "raw_exec", "Config": {"command": "/bin/sleep", "args": ["1"]},
		"Templates": [
			{"DestPath": "local/app.env", "EmbeddedTmpl": "INDEX={{ env \"NOMAD_ALLOC_INDEX\" }}\nNOW={{ timestamp }}\n{{ sprig_upper \"x\" }}", "Envvars": true},
			{"DestPath": "local/app.conf", "EmbeddedTmpl": "[[ env \"X\" ]]", "LeftDelim": "[[", "RightDelim": "]]", "ChangeMode": "signal", "ChangeSignal": "sighup"}
		]}]}]}}`)
	ts := req.Job.TaskGroups[0].Tasks[0].Templates
	if len(ts) != 2 {
		t.Fatalf("templates %+v", ts)
	}
	a, b := ts[0], ts[1]
	eq(t, "change_mode", a.ChangeMode, "restart")
	eq(t, "splay", a.Splay, 5*time.Second)
	eq(t, "perms", a.Perms, "0644")
	eq(t, "delims", a.LeftDelim+a.RightDelim, "{{}}")
	eq(t, "env", a.Envvars, true)
	eq(t, "signal", b.ChangeSignal, "SIGHUP")
	eq(t, "custom delims", b.LeftDelim, "[[")
}
