// Package catalog registers drover's built-in task drivers in one place:
// each with the declaration of its task config (checked by jobspec when a
// job is submitted) and its constructor (used by the node agent). Nomad's
// helper/pluginutils/catalog is the model. It decides which drivers exist;
// it never creates one by itself.
package catalog

import (
	"sort"

	"github.com/drover-sched/drover/drivers"
	"github.com/drover-sched/drover/drivers/docker"
	"github.com/drover-sched/drover/drivers/exec"
	"github.com/drover-sched/drover/drivers/rawexec"
)

// Builtin is one driver compiled into drover.
type Builtin struct {
	// Name is the driver's name in job specs.
	Name string
	// Config checks the driver's task config at submission, from the
	// same declaration the driver decodes it with on the node.
	Config drivers.ConfigValidator
	// New creates the driver on a node.
	New func(drivers.Options) (drivers.Driver, error)
	// TaskUser: the driver runs a task as the task's user.
	TaskUser bool
	// BridgeNetwork: the driver makes a bridge-mode group's network
	// namespace and runs its tasks in it (drivers.NetworkManager).
	BridgeNetwork bool
}

var builtins = []Builtin{
	{Name: docker.Name, Config: docker.Spec, New: func(o drivers.Options) (drivers.Driver, error) { return docker.New(o) }, TaskUser: true, BridgeNetwork: true},
	{Name: exec.Name, Config: exec.Spec, New: func(o drivers.Options) (drivers.Driver, error) { return exec.New(o) }, TaskUser: true},
	{Name: rawexec.Name, Config: rawexec.Spec, New: func(o drivers.Options) (drivers.Driver, error) { return rawexec.New(o) }},
}

// Builtins returns the built-in drivers, sorted by name.
func Builtins() []Builtin {
	out := append([]Builtin(nil), builtins...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Lookup returns the built-in driver called name.
func Lookup(name string) (Builtin, bool) {
	for _, b := range builtins {
		if b.Name == name {
			return b, true
		}
	}
	return Builtin{}, false
}
