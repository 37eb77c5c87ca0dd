// Package testjobs builds the small Nomad-format jobs the end-to-end tests
// of both homes submit through Nomad's Go client: raw_exec tasks running a
// test's shell script.
package testjobs

import (
	"time"

	"github.com/hashicorp/nomad/api"
)

// Service is a raw_exec service job of count allocs in group "web", whose
// task "server" runs /bin/sh script args... (100 MHz, 64 MiB, kill timeout
// 2 s).
func Service(id string, count int, script string, args ...string) *api.Job {
	job := api.NewServiceJob(id, id, "global", 50)
	tg := api.NewTaskGroup("web", count)
	task := api.NewTask("server", "raw_exec")
	task.Config = map[string]any{"command": "/bin/sh", "args": append([]string{script}, args...)}
	task.Require(&api.Resources{CPU: new(100), MemoryMB: new(64)})
	task.KillTimeout = new(2 * time.Second)
	tg.AddTask(task)
	job.AddTaskGroup(tg)
	return job
}

// Batch is a raw_exec batch job of one alloc in group "run", whose task
// "main" runs /bin/sh script once: no restarts, no rescheduling, so a
// failing script ends the alloc failed.
func Batch(id, script string) *api.Job {
	job := api.NewBatchJob(id, id, "global", 50)
	tg := api.NewTaskGroup("run", 1)
	tg.RestartPolicy = &api.RestartPolicy{Attempts: new(0), Mode: new("fail"), Interval: new(time.Minute), Delay: new(time.Second)}
	tg.ReschedulePolicy = &api.ReschedulePolicy{Attempts: new(0), Unlimited: new(false)}
	task := api.NewTask("main", "raw_exec")
	task.Config = map[string]any{"command": "/bin/sh", "args": []string{script}}
	task.Require(&api.Resources{CPU: new(100), MemoryMB: new(64)})
	tg.AddTask(task)
	job.AddTaskGroup(tg)
	return job
}
