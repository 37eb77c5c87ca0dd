package nodeagent

import (
	"fmt"
	"time"

	"github.com/drover-sched/drover/drivers"
	"github.com/drover-sched/drover/structs"
)

// newTaskEvent returns an event of the given type with the display message
// Nomad's CLI shows for it; Time is filled in when the event is recorded.
func newTaskEvent(typ string) *structs.TaskEvent {
	ev := &structs.TaskEvent{Type: typ, Details: map[string]string{}}
	switch typ {
	case structs.TaskReceived:
		ev.DisplayMessage = "Task received by client"
	case structs.TaskSetup:
		ev.Message = structs.TaskBuildingTaskDir
		ev.DisplayMessage = structs.TaskBuildingTaskDir
	case structs.TaskStarted:
		ev.DisplayMessage = "Task started by client"
	case structs.TaskKilled:
		ev.DisplayMessage = "Task successfully killed"
	case structs.TaskLeaderDead:
		ev.DisplayMessage = "Leader Task in Group dead"
	case structs.TaskDownloadingArtifacts:
		ev.DisplayMessage = "Client is downloading artifacts"
	}
	return ev
}

func terminatedEvent(ex *drivers.ExitResult) *structs.TaskEvent {
	ev := newTaskEvent(structs.TaskTerminated)
	ev.ExitCode = ex.ExitCode
	ev.Signal = ex.Signal
	ev.Details["exit_code"] = fmt.Sprint(ex.ExitCode)
	ev.Details["signal"] = fmt.Sprint(ex.Signal)
	msg := ex.Err
	if ex.OOMKilled {
		// Nomad's detail; the exit message says it too, as Nomad's
		// docker driver does.
		ev.Details["oom_killed"] = "true"
		if msg == "" {
			msg = "OOM Killed"
		}
	}
	ev.DisplayMessage = fmt.Sprintf("Exit Code: %d", ex.ExitCode)
	if ex.Signal != 0 {
		ev.DisplayMessage += fmt.Sprintf(", Signal: %d", ex.Signal)
	}
	if msg != "" {
		ev.Message = msg
		ev.Details["exit_message"] = msg
		ev.DisplayMessage += ", Exit Message: " + fmt.Sprintf("%q", msg)
	}
	if !ex.ExitedAt.IsZero() {
		ev.Time = ex.ExitedAt.UnixNano()
	}
	return ev
}

// driverMessageEvent is a message from the task's driver ("Downloading
// image ...", Nomad's "Driver" event).
func driverMessageEvent(msg string) *structs.TaskEvent {
	ev := newTaskEvent(structs.TaskEventDriverMessage)
	ev.Message = msg
	ev.Details["driver_message"] = msg
	ev.DisplayMessage = msg
	return ev
}

func restartingEvent(reason string, delay time.Duration) *structs.TaskEvent {
	ev := newTaskEvent(structs.TaskRestarting)
	ev.RestartReason = reason
	ev.StartDelay = int64(delay)
	ev.Details["restart_reason"] = reason
	ev.Details["start_delay"] = fmt.Sprint(int64(delay))
	ev.DisplayMessage = fmt.Sprintf("%s - Task restarting in %v", reason, delay.Round(time.Millisecond))
	return ev
}

// restartSignaledEvent records a restart asked for through the API
// (Nomad's "Restart Signaled").
func restartSignaledEvent() *structs.TaskEvent {
	ev := newTaskEvent(structs.TaskRestartSignal)
	ev.RestartReason = "User requested task to restart"
	ev.Details["restart_reason"] = ev.RestartReason
	ev.DisplayMessage = ev.RestartReason
	return ev
}

// signalingEvent records a signal sent through the API (Nomad's
// "Signaling").
func signalingEvent(sig string) *structs.TaskEvent {
	ev := newTaskEvent(structs.TaskSignaling)
	ev.TaskSignal = sig
	ev.TaskSignalReason = "User requested signal"
	ev.Details["signal"] = sig
	ev.DisplayMessage = "Task being sent signal " + sig + ": User requested signal"
	return ev
}

func notRestartingEvent(reason string) *structs.TaskEvent {
	ev := newTaskEvent(structs.TaskNotRestarting)
	ev.RestartReason = reason
	ev.FailsTask = true
	ev.Details["restart_reason"] = reason
	ev.Details["fails_task"] = "true"
	ev.DisplayMessage = reason
	return ev
}

func killingEvent(sig string, timeout time.Duration) *structs.TaskEvent {
	ev := newTaskEvent(structs.TaskKilling)
	ev.KillTimeout = timeout
	ev.Details["kill_timeout"] = timeout.String()
	ev.DisplayMessage = fmt.Sprintf("Sent %s. Waiting %v before force killing", sig, timeout)
	return ev
}

func siblingFailedEvent(sibling string) *structs.TaskEvent {
	ev := newTaskEvent(structs.TaskSiblingFailed)
	ev.FailedSibling = sibling
	ev.Details["failed_sibling"] = sibling
	ev.DisplayMessage = fmt.Sprintf("Task's sibling %q failed", sibling)
	return ev
}

func mainDeadEvent() *structs.TaskEvent {
	ev := newTaskEvent(structs.TaskMainDead)
	ev.DisplayMessage = "Main tasks in the group died"
	return ev
}

func driverFailureEvent(err error) *structs.TaskEvent {
	ev := newTaskEvent(structs.TaskDriverFailure)
	ev.DriverError = err.Error()
	ev.Details["driver_error"] = err.Error()
	ev.DisplayMessage = "Failed to start task: " + err.Error()
	return ev
}

func setupFailureEvent(err error) *structs.TaskEvent {
	ev := newTaskEvent(structs.TaskSetupFailure)
	ev.SetupError = err.Error()
	ev.FailsTask = true
	ev.Details["setup_error"] = err.Error()
	ev.Details["fails_task"] = "true"
	ev.DisplayMessage = "Error setting up task: " + err.Error()
	return ev
}

// prevAllocSkippedEvent says that the task starts without waiting for
// the previous alloc prevID or taking over its data, because asking about
// it failed for good.
func prevAllocSkippedEvent(prevID string, err error) *structs.TaskEvent {
	ev := newTaskEvent(structs.TaskPreviousAllocSkipped)
	ev.Message = err.Error()
	ev.Details["previous_alloc_id"] = prevID
	ev.Details["error"] = err.Error()
	ev.DisplayMessage = fmt.Sprintf("Previous allocation %s cannot be read (%v): not waiting for it, its data is not moved", prevID, err)
	return ev
}

func restoreFailedEvent(reason string) *structs.TaskEvent {
	ev := newTaskEvent(structs.TaskRestoreFailed)
	ev.Message = reason
	ev.FailsTask = true
	ev.Details["fails_task"] = "true"
	ev.DisplayMessage = reason
	return ev
}

// templateRestartEvent records a restart a template's change_mode asked
// for (Nomad's "Restart Signaled").
func templateRestartEvent() *structs.TaskEvent {
	ev := newTaskEvent(structs.TaskRestartSignal)
	ev.RestartReason = templateReason
	ev.Details["restart_reason"] = templateReason
	ev.DisplayMessage = templateReason
	return ev
}

// templateSignalEvent records a template's change_signal (Nomad's
// "Signaling", "Template re-rendered").
func templateSignalEvent(sig string) *structs.TaskEvent {
	ev := newTaskEvent(structs.TaskSignaling)
	ev.TaskSignal = sig
	ev.TaskSignalReason = "Template re-rendered"
	ev.Details["signal"] = sig
	ev.DisplayMessage = "Template re-rendered"
	return ev
}

// templateFailedEvent kills and fails a task whose template no longer
// renders (Nomad's "Template failed").
func templateFailedEvent(err error) *structs.TaskEvent {
	ev := newTaskEvent(structs.TaskKilling)
	ev.FailsTask = true
	ev.KillReason = "Template failed: " + err.Error()
	ev.Details["fails_task"] = "true"
	ev.Details["kill_reason"] = ev.KillReason
	ev.DisplayMessage = ev.KillReason
	return ev
}

// hookMessageEvent is a message from a task hook.
func hookMessageEvent(msg string) *structs.TaskEvent {
	ev := newTaskEvent(structs.TaskHookMessage)
	ev.Message = msg
	ev.DisplayMessage = msg
	return ev
}

// appendTaskEvent adds ev to st, keeping the last TaskMaxEventsPerTask.
func appendTaskEvent(st *structs.TaskState, ev *structs.TaskEvent) {
	if n := len(st.Events) + 1 - structs.TaskMaxEventsPerTask; n > 0 {
		st.Events = append(st.Events[:0:0], st.Events[n:]...)
	}
	st.Events = append(st.Events, ev)
}

// copyTaskState deep-copies a task state.
func copyTaskState(st *structs.TaskState) *structs.TaskState {
	if st == nil {
		return nil
	}
	c := *st
	c.Events = make([]*structs.TaskEvent, len(st.Events))
	for i, e := range st.Events {
		ec := *e
		if e.Details != nil {
			ec.Details = make(map[string]string, len(e.Details))
			for k, v := range e.Details {
				ec.Details[k] = v
			}
		}
		c.Events[i] = &ec
	}
	return &c
}

// checkRestartEvent records a restart a check's check_restart asked for
// (Nomad's "Restart Signaled", "healthcheck: check ... unhealthy").
func checkRestartEvent(check string) *structs.TaskEvent {
	ev := newTaskEvent(structs.TaskRestartSignal)
	ev.RestartReason = fmt.Sprintf("healthcheck: check %q unhealthy", check)
	ev.Details["restart_reason"] = ev.RestartReason
	ev.DisplayMessage = ev.RestartReason
	return ev
}
