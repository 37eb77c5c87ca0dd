package jobspec

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/hashicorp/nomad/api"

	driverspkg "github.com/drover-sched/drover/drivers"
	"github.com/drover-sched/drover/drivers/catalog"
	"github.com/drover-sched/drover/structs"
)

const minimalService = `{"Job": {
	"ID": "web",
	"TaskGroups": [{
		"Name": "web",
		"Tasks": [{"Name": "server", "Driver": "raw_exec", "Config": {"command": "/bin/sleep", "args": ["3600"]}}]
	}]
}}`

const minimalBatch = `{"Job": {
	"ID": "report",
	"Type": "batch",
	"Datacenters": ["dc1", "dc2"],
	"TaskGroups": [{
		"Name": "run",
		"Count": 2,
		"Tasks": [{"Name": "main", "Driver": "raw_exec", "Config": {"command": "/bin/true"}}]
	}]
}}`

func decode(t *testing.T, body string) *RegisterRequest {
	t.Helper()
	req, err := DecodeRegisterRequest(strings.NewReader(body))
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	return req
}

func eq[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func TestMinimalServiceJobGetsNomadDefaults(t *testing.T) {
	j := decode(t, minimalService).Job

	eq(t, "Region", j.Region, "global")
	eq(t, "Namespace", j.Namespace, "default")
	eq(t, "ID", j.ID, "web")
	eq(t, "Name", j.Name, "web")
	eq(t, "Type", j.Type, structs.JobTypeService)
	eq(t, "Priority", j.Priority, 50)
	eq(t, "NodePool", j.NodePool, "default")
	eq(t, "AllAtOnce", j.AllAtOnce, false)
	if len(j.Datacenters) != 1 || j.Datacenters[0] != "*" {
		t.Errorf("Datacenters = %v, want [*] (any datacenter, as Nomad stores it)", j.Datacenters)
	}
	if j.Update == nil || *j.Update != defaultUpdate {
		t.Errorf("job Update = %+v, want Nomad's default %+v", j.Update, defaultUpdate)
	}

	if len(j.TaskGroups) != 1 {
		t.Fatalf("groups = %d", len(j.TaskGroups))
	}
	tg := j.TaskGroups[0]
	eq(t, "Count", tg.Count, 1)
	wantRestart := structs.RestartPolicy{Attempts: 2, Interval: 30 * time.Minute, Delay: 15 * time.Second, Mode: "fail"}
	if tg.RestartPolicy == nil || *tg.RestartPolicy != wantRestart {
		t.Errorf("group RestartPolicy = %+v, want %+v", tg.RestartPolicy, wantRestart)
	}
	wantResched := structs.ReschedulePolicy{Delay: 30 * time.Second, DelayFunction: "exponential", MaxDelay: time.Hour, Unlimited: true}
	if tg.ReschedulePolicy == nil || *tg.ReschedulePolicy != wantResched {
		t.Errorf("ReschedulePolicy = %+v, want %+v", tg.ReschedulePolicy, wantResched)
	}
	if tg.Update == nil || *tg.Update != defaultUpdate {
		t.Errorf("group Update = %+v, want %+v", tg.Update, defaultUpdate)
	}
	wantMigrate := structs.MigrateStrategy{MaxParallel: 1, HealthCheck: "checks", MinHealthyTime: 10 * time.Second, HealthyDeadline: 5 * time.Minute}
	if tg.Migrate == nil || *tg.Migrate != wantMigrate {
		t.Errorf("Migrate = %+v, want %+v", tg.Migrate, wantMigrate)
	}
	if tg.EphemeralDisk == nil || *tg.EphemeralDisk != (structs.EphemeralDisk{SizeMB: 300}) {
		t.Errorf("EphemeralDisk = %+v, want 300 MiB", tg.EphemeralDisk)
	}
	if tg.MaxClientDisconnect != nil || tg.StopAfterClientDisconnect != nil || tg.PreventRescheduleOnLost || tg.ShutdownDelay != nil {
		t.Errorf("disconnect settings = %v %v %v %v, want none", tg.MaxClientDisconnect, tg.StopAfterClientDisconnect, tg.PreventRescheduleOnLost, tg.ShutdownDelay)
	}

	task := tg.Tasks[0]
	eq(t, "Driver", task.Driver, "raw_exec")
	eq(t, "KillTimeout", task.KillTimeout, 5*time.Second)
	eq(t, "KillSignal", task.KillSignal, "")
	if task.LogConfig == nil || *task.LogConfig != (structs.LogConfig{MaxFiles: 10, MaxFileSizeMB: 10}) {
		t.Errorf("LogConfig = %+v, want 10 x 10 MiB", task.LogConfig)
	}
	if task.Resources == nil || *task.Resources != (structs.Resources{CPU: 100, MemoryMB: 300}) {
		t.Errorf("Resources = %+v, want cpu 100, memory 300", task.Resources)
	}
	if task.RestartPolicy == nil || *task.RestartPolicy != wantRestart {
		t.Errorf("task RestartPolicy = %+v, want the group's %+v", task.RestartPolicy, wantRestart)
	}
	if task.RestartPolicy == tg.RestartPolicy {
		t.Error("task and group share a RestartPolicy pointer")
	}
	wantConfig := map[string]any{"command": "/bin/sleep", "args": []any{"3600"}}
	if !reflect.DeepEqual(task.Config, wantConfig) {
		t.Errorf("Config = %#v, want %#v", task.Config, wantConfig)
	}
}

var defaultUpdate = structs.UpdateStrategy{
	Stagger: 30 * time.Second, MaxParallel: 1, HealthCheck: "checks",
	MinHealthyTime: 10 * time.Second, HealthyDeadline: 5 * time.Minute, ProgressDeadline: 10 * time.Minute,
}

func TestMinimalBatchJobGetsBatchDefaults(t *testing.T) {
	j := decode(t, minimalBatch).Job
	eq(t, "Type", j.Type, structs.JobTypeBatch)
	eq(t, "Priority", j.Priority, 50)
	if !reflect.DeepEqual(j.Datacenters, []string{"dc1", "dc2"}) {
		t.Errorf("Datacenters = %v", j.Datacenters)
	}
	if j.Update != nil {
		t.Errorf("batch job Update = %+v, want nil", j.Update)
	}
	tg := j.TaskGroups[0]
	eq(t, "Count", tg.Count, 2)
	wantRestart := structs.RestartPolicy{Attempts: 3, Interval: 24 * time.Hour, Delay: 15 * time.Second, Mode: "fail"}
	if *tg.RestartPolicy != wantRestart || *tg.Tasks[0].RestartPolicy != wantRestart {
		t.Errorf("RestartPolicy = %+v / %+v, want %+v", tg.RestartPolicy, tg.Tasks[0].RestartPolicy, wantRestart)
	}
	wantResched := structs.ReschedulePolicy{Attempts: 1, Interval: 24 * time.Hour, Delay: 5 * time.Second, DelayFunction: "constant"}
	if *tg.ReschedulePolicy != wantResched {
		t.Errorf("ReschedulePolicy = %+v, want %+v", tg.ReschedulePolicy, wantResched)
	}
	if tg.Update != nil || tg.Migrate != nil {
		t.Errorf("batch group Update/Migrate = %+v / %+v, want none", tg.Update, tg.Migrate)
	}
	task := tg.Tasks[0]
	eq(t, "KillTimeout", task.KillTimeout, 5*time.Second)
	eq(t, "CPU", task.Resources.CPU, 100)
	eq(t, "MemoryMB", task.Resources.MemoryMB, 300)
	eq(t, "DiskMB", tg.EphemeralDisk.SizeMB, 300)
	eq(t, "MaxFiles", task.LogConfig.MaxFiles, 10)
	eq(t, "MaxFileSizeMB", task.LogConfig.MaxFileSizeMB, 10)
}

// The testdata file is written by hand in the exact shape `nomad job run
// -output` prints (every field of api.Job, nulls included).
func TestNomadRunOutputDecodes(t *testing.T) {
	data, err := os.ReadFile("testdata/nomad-run-output.json")
	if err != nil {
		t.Fatal(err)
	}
	j := decode(t, string(data)).Job

	eq(t, "ID", j.ID, "example")
	eq(t, "Region", j.Region, "global")
	eq(t, "Meta", j.Meta["owner"], "platform")
	if len(j.Constraints) != 1 || *j.Constraints[0] != (structs.Constraint{LTarget: "${attr.kernel.name}", RTarget: "linux", Operand: "="}) {
		t.Errorf("job Constraints = %v", j.Constraints)
	}
	tg := j.TaskGroups[0]
	eq(t, "Count", tg.Count, 3)
	eq(t, "group Meta", tg.Meta["team"], "storage")
	eq(t, "EphemeralDisk", tg.EphemeralDisk.SizeMB, 500)

	// The group's update block is merged onto the job's.
	wantUpdate := structs.UpdateStrategy{
		Stagger: 30 * time.Second, MaxParallel: 2, HealthCheck: "task_states", MinHealthyTime: 10 * time.Second,
		HealthyDeadline: 3 * time.Minute, ProgressDeadline: 10 * time.Minute, Canary: 1, AutoRevert: true,
	}
	if *tg.Update != wantUpdate {
		t.Errorf("group Update = %+v, want %+v", *tg.Update, wantUpdate)
	}
	// Job-level reschedule and migrate blocks are merged into the group.
	wantResched := structs.ReschedulePolicy{Delay: 10 * time.Second, DelayFunction: "exponential", MaxDelay: time.Hour, Unlimited: true}
	if *tg.ReschedulePolicy != wantResched {
		t.Errorf("ReschedulePolicy = %+v, want %+v", *tg.ReschedulePolicy, wantResched)
	}
	wantMigrate := structs.MigrateStrategy{MaxParallel: 1, HealthCheck: "task_states", MinHealthyTime: 5 * time.Second, HealthyDeadline: 2 * time.Minute}
	if *tg.Migrate != wantMigrate {
		t.Errorf("Migrate = %+v, want %+v", *tg.Migrate, wantMigrate)
	}
	// disconnect { lost_after = "1h", replace = false }
	if tg.MaxClientDisconnect == nil || *tg.MaxClientDisconnect != time.Hour || !tg.PreventRescheduleOnLost || tg.StopAfterClientDisconnect != nil {
		t.Errorf("disconnect = %v %v %v", tg.MaxClientDisconnect, tg.PreventRescheduleOnLost, tg.StopAfterClientDisconnect)
	}

	// The task's restart block is merged onto the group's.
	task := tg.Tasks[0]
	wantGroupRestart := structs.RestartPolicy{Attempts: 4, Interval: 30 * time.Minute, Delay: 15 * time.Second, Mode: "delay"}
	if *tg.RestartPolicy != wantGroupRestart {
		t.Errorf("group RestartPolicy = %+v", *tg.RestartPolicy)
	}
	wantTaskRestart := wantGroupRestart
	wantTaskRestart.Delay = 5 * time.Second
	if *task.RestartPolicy != wantTaskRestart {
		t.Errorf("task RestartPolicy = %+v, want %+v", *task.RestartPolicy, wantTaskRestart)
	}
	eq(t, "KillTimeout", task.KillTimeout, 20*time.Second)
	eq(t, "KillSignal", task.KillSignal, "SIGTERM")
	eq(t, "Env", task.Env["REDIS_LOGLEVEL"], "notice")
	if *task.Resources != (structs.Resources{CPU: 500, MemoryMB: 256, MemoryMaxMB: 512}) {
		t.Errorf("Resources = %+v", *task.Resources)
	}
	if *task.LogConfig != (structs.LogConfig{MaxFiles: 5, MaxFileSizeMB: 15}) {
		t.Errorf("LogConfig = %+v", *task.LogConfig)
	}
}

// What Nomad's Go client sends (api.Jobs.RegisterOpts marshals a
// JobRegisterRequest, WriteRequest fields included) decodes.
func TestNomadGoClientBodyDecodes(t *testing.T) {
	task := api.NewTask("server", "raw_exec").SetConfig("command", "/bin/sleep").SetConfig("args", []string{"60"})
	job := api.NewServiceJob("client-job", "client-job", "global", 70).
		AddDatacenter("dc1").
		AddTaskGroup(api.NewTaskGroup("g", 2).AddTask(task))
	body, err := json.Marshal(&api.JobRegisterRequest{
		Job: job, EnforceIndex: true, JobModifyIndex: 7, PreserveCounts: true, EvalPriority: 90,
		Submission: &api.JobSubmission{Source: "job {}", Format: "hcl2"},
	})
	if err != nil {
		t.Fatal(err)
	}
	req := decode(t, string(body))
	eq(t, "ID", req.Job.ID, "client-job")
	eq(t, "Priority", req.Job.Priority, 70)
	eq(t, "EnforceIndex", req.EnforceIndex, true)
	eq(t, "JobModifyIndex", req.JobModifyIndex, uint64(7))
	eq(t, "PreserveCounts", req.PreserveCounts, true)
	eq(t, "EvalPriority", req.EvalPriority, 90)
	if req.Submission == nil || req.Submission.Format != "hcl2" || req.Submission.Source != "job {}" {
		t.Errorf("Submission = %+v", req.Submission)
	}
	eq(t, "Count", req.Job.TaskGroups[0].Count, 2)
}

func TestNamespaceAndRegionPrecedence(t *testing.T) {
	withNS := strings.Replace(minimalService, `"ID": "web",`, `"ID": "web", "Namespace": "jobns",`, 1)
	cases := []struct {
		name, body string
		opts       DecodeOptions
		wantNS     string
	}{
		{"default", minimalService, DecodeOptions{}, "default"},
		{"job's own", withNS, DecodeOptions{}, "jobns"},
		{"body wins over job", strings.Replace(withNS, `{"Job"`, `{"Namespace": "bodyns", "Job"`, 1), DecodeOptions{}, "bodyns"},
		{"query fills a job without one", minimalService, DecodeOptions{Namespace: "queryns"}, "queryns"},
		{"query equal to the job's", withNS, DecodeOptions{Namespace: "jobns"}, "jobns"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, err := DecodeRegisterRequestOpts(strings.NewReader(c.body), c.opts)
			if err != nil {
				t.Fatal(err)
			}
			eq(t, "Job.Namespace", req.Job.Namespace, c.wantNS)
			eq(t, "Namespace", req.Namespace, c.wantNS)
		})
	}

	// A job naming another namespace than the request's is refused, not
	// silently moved.
	_, err := DecodeRegisterRequestOpts(strings.NewReader(withNS), DecodeOptions{Namespace: "queryns"})
	var ves ValidationErrors
	if !errors.As(err, &ves) || ves[0].Field != "Job.Namespace" {
		t.Fatalf("namespace mismatch: %v", err)
	}

	req, err := DecodeRegisterRequestOpts(strings.NewReader(minimalService), DecodeOptions{Region: "eu"})
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "Region", req.Job.Region, "eu")
	withRegion := strings.Replace(minimalService, `"ID": "web",`, `"ID": "web", "Region": "us",`, 1)
	req, err = DecodeRegisterRequestOpts(strings.NewReader(withRegion), DecodeOptions{Region: "eu"})
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "explicit Region", req.Job.Region, "us")
}

func TestDisconnectSettings(t *testing.T) {
	cases := []struct {
		name      string
		group     string
		lostAfter *time.Duration
		stopAfter *time.Duration
		prevent   bool
	}{
		{"disconnect block", `"Disconnect": {"LostAfter": 600000000000, "Replace": false}`, durationPtr(10 * time.Minute), nil, true},
		{"disconnect stop_on_client_after", `"Disconnect": {"StopOnClientAfter": 60000000000}`, nil, durationPtr(time.Minute), false},
		{"disconnect replace default", `"Disconnect": {"LostAfter": 60000000000}`, durationPtr(time.Minute), nil, false},
		{"deprecated fields", `"MaxClientDisconnect": 120000000000, "PreventRescheduleOnLost": true, "ReschedulePolicy": {"Attempts": 0, "Unlimited": false}`, durationPtr(2 * time.Minute), nil, true},
		{"deprecated stop_after", `"StopAfterClientDisconnect": 30000000000`, nil, durationPtr(30 * time.Second), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := strings.Replace(minimalService, `"Name": "web",`, `"Name": "web", `+c.group+`,`, 1)
			tg := decode(t, body).Job.TaskGroups[0]
			if !reflect.DeepEqual(tg.MaxClientDisconnect, c.lostAfter) {
				t.Errorf("MaxClientDisconnect = %v, want %v", fmtDur(tg.MaxClientDisconnect), fmtDur(c.lostAfter))
			}
			if !reflect.DeepEqual(tg.StopAfterClientDisconnect, c.stopAfter) {
				t.Errorf("StopAfterClientDisconnect = %v, want %v", fmtDur(tg.StopAfterClientDisconnect), fmtDur(c.stopAfter))
			}
			eq(t, "PreventRescheduleOnLost", tg.PreventRescheduleOnLost, c.prevent)
		})
	}
}

func fmtDur(d *time.Duration) string {
	if d == nil {
		return "nil"
	}
	return d.String()
}

func TestLogConfigDeprecatedEnabled(t *testing.T) {
	body := strings.Replace(minimalService, `"Driver": "raw_exec",`, `"Driver": "raw_exec", "LogConfig": {"Enabled": false},`, 1)
	eq(t, "Disabled", decode(t, body).Job.TaskGroups[0].Tasks[0].LogConfig.Disabled, true)
}

func TestStopIsKept(t *testing.T) {
	body := strings.Replace(minimalService, `"ID": "web",`, `"ID": "web", "Stop": true, "Status": "dead", "Version": 4,`, 1)
	j := decode(t, body).Job
	eq(t, "Stop", j.Stop, true)
	eq(t, "Status (server-set, ignored)", j.Status, "")
	eq(t, "Version (server-set, ignored)", j.Version, uint64(0))
}

func TestRegisterDriver(t *testing.T) {
	const name = "test_exec"
	RegisterDriver(name, func(config map[string]any, _ driverspkg.ValidateContext) []*ValidationError {
		if _, ok := config["image"]; !ok {
			return []*ValidationError{{Field: "image", Rule: "is required"}}
		}
		return nil
	})
	defer func() {
		driversMu.Lock()
		delete(drivers, name)
		driversMu.Unlock()
	}()
	var want []string
	for _, b := range catalog.Builtins() {
		want = append(want, b.Name)
	}
	want = append(want, name)
	sort.Strings(want)
	if got := Drivers(); !reflect.DeepEqual(got, want) {
		t.Errorf("Drivers() = %v", got)
	}
	ok := strings.Replace(minimalService, `"Driver": "raw_exec", "Config": {"command": "/bin/sleep", "args": ["3600"]}`, `"Driver": "test_exec", "Config": {"image": "x"}`, 1)
	decode(t, ok)
	bad := strings.Replace(minimalService, `"Driver": "raw_exec", "Config": {"command": "/bin/sleep", "args": ["3600"]}`, `"Driver": "test_exec", "Config": {}`, 1)
	_, err := DecodeRegisterRequest(strings.NewReader(bad))
	assertError(t, err, `Job.TaskGroups[0] "web".Tasks[0] "server".Config.image`, "is required")
}

func TestErrorsAreValidationErrors(t *testing.T) {
	body := strings.Replace(minimalService, `"Name": "web",`, `"Name": "web", "Count": -1,`, 1)
	body = strings.Replace(body, `"Driver": "raw_exec",`, `"Driver": "raw_exec", "Resources": {"MemoryMB": 4},`, 1)
	_, err := DecodeRegisterRequest(strings.NewReader(body))
	var one *ValidationError
	if !errors.As(err, &one) {
		t.Fatalf("errors.As(*ValidationError) failed on %v", err)
	}
	var all ValidationErrors
	if !errors.As(err, &all) || len(all) != 2 {
		t.Fatalf("errors.As(ValidationErrors) = %v, want 2 errors", all)
	}
	want := `2 errors: Job.TaskGroups[0] "web".Count: must not be negative (got -1); ` +
		`Job.TaskGroups[0] "web".Tasks[0] "server".Resources.MemoryMB: must be at least 10 MiB (got 4)`
	eq(t, "Error()", err.Error(), want)
}

func TestReadErrorIsNotAValidationError(t *testing.T) {
	_, err := DecodeRegisterRequest(iotest.ErrReader(errors.New("connection reset")))
	var ve *ValidationError
	if err == nil || errors.As(err, &ve) {
		t.Fatalf("err = %v, want a plain read error", err)
	}
}

// Huge attempt counts must not make validation slow.
func TestRescheduleArithmeticIsCheap(t *testing.T) {
	for _, fn := range []string{"constant", "exponential", "fibonacci"} {
		r := &structs.ReschedulePolicy{Attempts: 1 << 40, Interval: time.Hour, Delay: 5 * time.Second, DelayFunction: fn, MaxDelay: time.Minute}
		start := time.Now()
		possible, needed, ok := rescheduleFits(r)
		if ok || possible <= 0 || needed <= time.Hour {
			t.Errorf("%s: possible %d, needed %v, ok %v", fn, possible, needed, ok)
		}
		if time.Since(start) > 100*time.Millisecond {
			t.Errorf("%s: took %v", fn, time.Since(start))
		}
	}
}

func TestRescheduleArithmeticMatchesNomad(t *testing.T) {
	cases := []struct {
		fn                      string
		attempts                int
		interval, delay, maxDel time.Duration
		possible                int
		ok                      bool
	}{
		{"constant", 3, time.Minute, 20 * time.Second, 0, 3, true},
		{"constant", 10, time.Minute, 30 * time.Second, 0, 2, false},
		// 5s, 10s, 20s, 40s, then capped: 40+60, ...
		{"exponential", 4, time.Minute, 5 * time.Second, time.Hour, 4, true},
		{"exponential", 5, time.Minute, 5 * time.Second, time.Hour, 4, false},
		{"exponential", 3, 2 * time.Minute, 30 * time.Second, time.Minute, 2, false},
		// 5, 5, 10, 15, 25, 40, 65
		{"fibonacci", 6, time.Minute, 5 * time.Second, time.Hour, 6, true},
		{"fibonacci", 7, time.Minute, 5 * time.Second, time.Hour, 6, false},
	}
	for _, c := range cases {
		r := &structs.ReschedulePolicy{Attempts: c.attempts, Interval: c.interval, Delay: c.delay, DelayFunction: c.fn, MaxDelay: c.maxDel}
		possible, _, ok := rescheduleFits(r)
		if possible != c.possible || ok != c.ok {
			t.Errorf("%+v: possible %d ok %v, want %d %v", c, possible, ok, c.possible, c.ok)
		}
	}
}

// Validate works on drover's own job too, and rejects what only drover's
// types can express.
func TestValidateStructsJob(t *testing.T) {
	j := decode(t, minimalService).Job
	if err := Validate(j); err != nil {
		t.Fatalf("Validate(decoded job) = %v", err)
	}
	bad := j.Copy()
	bad.Type = structs.JobTypeSystem
	bad.Multiregion = &structs.Multiregion{Regions: []*structs.MultiregionRegion{{Name: "eu"}}}
	bad.TaskGroups[0].Tasks[0].Resources.Cores = 2
	err := Validate(bad)
	assertError(t, err, `Job.TaskGroups[0] "web".ReschedulePolicy`, "must not be set for system jobs")
	assertError(t, err, "Job", "multiregion block is not supported")
	assertError(t, err, `Job.TaskGroups[0] "web".Tasks[0] "server".Resources.Cores`, "not supported")
	assertError(t, Validate(nil), "Job", "is missing")
}

func assertError(t *testing.T, err error, field, rule string) {
	t.Helper()
	var all ValidationErrors
	if !errors.As(err, &all) {
		t.Fatalf("err = %v (%T), want ValidationErrors with %s: ...%s...", err, err, field, rule)
	}
	for _, e := range all {
		if e.Field == field && strings.Contains(e.Rule, rule) {
			return
		}
	}
	t.Errorf("no error %q: ...%q... in:\n%s", field, rule, strings.ReplaceAll(err.Error(), "; ", "\n"))
}

func TestDecodeIsDeterministic(t *testing.T) {
	body := strings.Replace(minimalService, `"ID": "web",`, `"ID": "web", "Zzz": 1, "Aaa": 2, "Priority": "x",`, 1)
	_, err1 := DecodeRegisterRequest(bytes.NewReader([]byte(body)))
	_, err2 := DecodeRegisterRequest(bytes.NewReader([]byte(body)))
	if err1 == nil || err1.Error() != err2.Error() {
		t.Fatalf("errors differ or nil: %v / %v", err1, err2)
	}
	want := "3 errors: Job.Aaa: unknown field (not in Nomad's job format; check the spelling); " +
		"Job.Priority: expected number, got string; Job.Zzz: unknown field (not in Nomad's job format; check the spelling)"
	eq(t, "Error()", err1.Error(), want)
}

// pathAtOffset names the value at encoding/json's error offsets.
func TestPathAtOffset(t *testing.T) {
	type target struct {
		A struct {
			List []int
			Obj  struct{ N int }
			Str  string
			Big  float64
		}
	}
	cases := []struct{ doc, want string }{
		{`{"A": {"List": [1, "x", 3]}}`, "A.List[1]"},
		{`{"A": {"List": [1, 2.5]}}`, "A.List[1]"},
		{`{"A": {"Obj": {"N": "s"}, "Str": "ok"}}`, "A.Obj.N"},
		{`{"A": {"Obj": {"N": 1.5}, "Str": "ok"}}`, "A.Obj.N"},
		{`{"A": {"Str": {}}}`, "A.Str"},
		{`{"A": {"Str": [1]}}`, "A.Str"},
		{`{"A": {"Big": 1e400, "Str": "x"}}`, "A.Big"},
		{`{"A": {"Big": 1e400}}`, "A.Big"},
		{`{"A": {"Str": 7}}`, "A.Str"},
	}
	for _, c := range cases {
		var v target
		var te *json.UnmarshalTypeError
		if err := json.Unmarshal([]byte(c.doc), &v); !errors.As(err, &te) {
			t.Fatalf("%s: err = %v, want a type error", c.doc, err)
		}
		eq(t, c.doc, pathAtOffset([]byte(c.doc), te.Offset), c.want)
	}
}

// A job drover stores and serves (structs.Job's JSON has Nomad's names)
// can be submitted again unchanged, as `nomad job inspect` output can be
// fed back to `nomad job run`.
func TestStoredJobRoundTrips(t *testing.T) {
	data, err := os.ReadFile("testdata/nomad-run-output.json")
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"run output": string(data), "service": minimalService, "batch": minimalBatch} {
		t.Run(name, func(t *testing.T) {
			first := decode(t, body).Job
			again, err := json.Marshal(map[string]any{"Job": first})
			if err != nil {
				t.Fatal(err)
			}
			second := decode(t, string(again)).Job
			if !reflect.DeepEqual(first, second) {
				a, _ := json.Marshal(first)
				b, _ := json.Marshal(second)
				t.Errorf("round trip changed the job:\n%s\n%s", a, b)
			}
		})
	}
}

func TestWildcardDatacenter(t *testing.T) {
	body := strings.Replace(minimalService, `"ID": "web",`, `"ID": "web", "Datacenters": ["*"],`, 1)
	if dcs := decode(t, body).Job.Datacenters; !reflect.DeepEqual(dcs, []string{"*"}) {
		t.Errorf("Datacenters = %v, want [*]", dcs)
	}
}

// TestDeepNestingGivesAShortError: a pathological body gets a 400 whose
// message stays small.
func TestDeepNestingGivesAShortError(t *testing.T) {
	deep := `{"Job": {"ID": "x", "Meta": ` + strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `}}`
	_, err := DecodeRegisterRequest(strings.NewReader(deep))
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("deep nesting: %v", err)
	}
	if len(err.Error()) > 1000 {
		t.Fatalf("error message of %d bytes", len(err.Error()))
	}
}

// TestExecTaskDecodes: an exec task with its options and a user is
// accepted as submitted.
func TestExecTaskDecodes(t *testing.T) {
	body := strings.Replace(minimalService, `"Driver": "raw_exec", "Config": {"command": "/bin/sleep", "args": ["3600"]}`,
		`"Driver": "exec", "User": "nobody", "Config": {"command": "/bin/sleep", "args": ["3600"], "pid_mode": "private", "work_dir": "/local"}`, 1)
	task := decode(t, body).Job.TaskGroups[0].Tasks[0]
	if task.Driver != "exec" || task.User != "nobody" || task.Config["work_dir"] != "/local" {
		t.Fatalf("task %+v", task)
	}
}

// TestDockerTaskDecodes: a docker task as Nomad users write it (HCL
// blocks rendered as lists) is accepted as submitted.
func TestDockerTaskDecodes(t *testing.T) {
	body := strings.Replace(minimalService, `"Driver": "raw_exec", "Config": {"command": "/bin/sleep", "args": ["3600"]}`,
		`"Driver": "docker", "User": "1000", "Config": {"image": "redis:7", "args": ["--port", "${NOMAD_META_port}"], "force_pull": false,
		"labels": [{"team": "core"}], "auth": [{"username": "u", "password": "p"}], "network_mode": "host",
		"volumes": ["local/conf:/etc/redis:ro"], "mount": [{"type": "tmpfs", "target": "/scratch", "tmpfs_options": [{"size": 1048576}]}],
		"logging": [{"type": "json-file", "config": [{"max-size": "10m"}]}], "dns_servers": ["10.0.0.2"], "privileged": true}`, 1)
	task := decode(t, body).Job.TaskGroups[0].Tasks[0]
	if task.Driver != "docker" || task.User != "1000" || task.Config["image"] != "redis:7" {
		t.Fatalf("task %+v", task)
	}
}

// TestMemoryMaxWarnsOnlyForRawExec: memory_max is the hard limit of exec
// and docker tasks, so only raw_exec's is named in the warnings.
func TestMemoryMaxWarnsOnlyForRawExec(t *testing.T) {
	job := &structs.Job{TaskGroups: []*structs.TaskGroup{{Name: "g", Tasks: []*structs.Task{
		{Name: "raw", Driver: "raw_exec", Resources: &structs.Resources{MemoryMB: 64, MemoryMaxMB: 128}},
		{Name: "iso", Driver: "exec", Resources: &structs.Resources{MemoryMB: 64, MemoryMaxMB: 128}},
		{Name: "box", Driver: "docker", Resources: &structs.Resources{MemoryMB: 64, MemoryMaxMB: 128}},
	}}}}
	w := Warnings(job)
	if len(w) != 1 || !strings.Contains(w[0], `Tasks[0] "raw".Resources.MemoryMaxMB: not enforced`) {
		t.Fatalf("warnings %q", w)
	}
}
