package nodeagent

import (
	"context"

	"github.com/drover-sched/drover/structs"
)

// allocHook is one step of an alloc's life. A hook implements one or more
// of the hook-point interfaces below; the alloc runner calls them in list
// order: the alloc dir, the previous alloc, deployment health.
type allocHook interface {
	Name() string
}

// allocPrerunHook runs before the alloc's tasks start (never for a
// restored terminal alloc), beside the update hooks. An error fails the
// alloc; ctx ends when the alloc is stopped or destroyed, or the agent
// shuts down.
type allocPrerunHook interface {
	allocHook
	Prerun(ctx context.Context) error
}

// allocUpdateHook runs when the server sends a newer version of the alloc.
type allocUpdateHook interface {
	allocHook
	Update(alloc *structs.Allocation) error
}

// allocPostrunHook runs once all of the alloc's tasks are dead.
type allocPostrunHook interface {
	allocHook
	Postrun() error
}

// allocDestroyHook runs when the alloc is destroyed, after its tasks are
// dead.
type allocDestroyHook interface {
	allocHook
	Destroy() error
}

// allocTaskStateHook is told, from the alloc runner's goroutine, that a
// task's state changed.
type allocTaskStateHook interface {
	allocHook
	TaskStatesChanged()
}

// allocShutdownHook runs when the agent stops while the alloc runs on
// (its tasks keep running under their supervisors).
type allocShutdownHook interface {
	allocHook
	Shutdown()
}

// allocDirHook builds the alloc dir before the tasks run and removes it
// when the alloc is destroyed.
type allocDirHook struct {
	ar *allocRunner
}

func (*allocDirHook) Name() string { return "alloc_dir" }

func (h *allocDirHook) Prerun(context.Context) error { return h.ar.allocDir.Build() }

func (h *allocDirHook) Destroy() error { return h.ar.allocDir.Destroy() }
