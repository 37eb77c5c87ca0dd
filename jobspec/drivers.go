package jobspec

import (
	"sort"
	"sync"

	driverspkg "github.com/drover-sched/drover/drivers"
	"github.com/drover-sched/drover/drivers/catalog"
	"github.com/drover-sched/drover/drivers/rawexec"
)

// DriverConfigValidator checks a task's driver configuration (the task's
// Config block, as decoded from JSON: strings, float64 or json.Number
// numbers, bools, []any, map[string]any). It returns one ValidationError per
// problem, with Field naming the config key ("command", "args[1]") relative
// to the task's Config; jobspec prefixes the task's path.
//
// vc says what the config's rules may need to know of the task's group:
// the labels of its network ports (a docker task's `ports`).
type DriverConfigValidator func(config map[string]any, vc driverspkg.ValidateContext) []*ValidationError

// RawExecDriver is the name of the built-in raw_exec driver.
const RawExecDriver = rawexec.Name

var (
	driversMu sync.RWMutex
	drivers   = builtinDrivers()
)

// builtinDrivers are drivers/catalog's built-ins, each checked by the
// declaration of its task config that the node decodes it with.
func builtinDrivers() map[string]DriverConfigValidator {
	out := map[string]DriverConfigValidator{}
	for _, b := range catalog.Builtins() {
		spec := b.Config
		out[b.Name] = func(config map[string]any, vc driverspkg.ValidateContext) []*ValidationError {
			var errs []*ValidationError
			for _, e := range spec.Validate(config, vc) {
				errs = append(errs, &ValidationError{Field: e.Field, Rule: e.Rule})
			}
			return errs
		}
	}
	return out
}

// RegisterDriver adds (or replaces) a built-in driver and the validator of
// its task config. drover's drivers are compiled in: a task naming a driver
// that was never registered is rejected. Call it from an init function of
// the package that implements the driver.
func RegisterDriver(name string, validate DriverConfigValidator) {
	if name == "" || validate == nil {
		panic("jobspec: RegisterDriver needs a name and a validator")
	}
	driversMu.Lock()
	defer driversMu.Unlock()
	drivers[name] = validate
}

// Drivers returns the names of the known drivers, sorted.
func Drivers() []string {
	driversMu.RLock()
	defer driversMu.RUnlock()
	out := make([]string, 0, len(drivers))
	for name := range drivers {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

func lookupDriver(name string) (DriverConfigValidator, bool) {
	driversMu.RLock()
	defer driversMu.RUnlock()
	v, ok := drivers[name]
	return v, ok
}
