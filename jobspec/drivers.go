package jobspec

import (
	"fmt"
	"sort"
	"sync"
)

// DriverConfigValidator checks a task's driver configuration (the task's
// Config block, as decoded from JSON: strings, float64 or json.Number
// numbers, bools, []any, map[string]any). It returns one ValidationError per
// problem, with Field naming the config key ("command", "args[1]") relative
// to the task's Config; jobspec prefixes the task's path.
type DriverConfigValidator func(config map[string]any) []*ValidationError

// RawExecDriver is the name of the built-in raw_exec driver.
const RawExecDriver = "raw_exec"

var (
	driversMu sync.RWMutex
	drivers   = map[string]DriverConfigValidator{
		RawExecDriver: validateRawExecConfig,
	}
)

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

// validateRawExecConfig checks raw_exec's config: command (required,
// non-empty string) and args (list of strings); nothing else.
func validateRawExecConfig(config map[string]any) []*ValidationError {
	var errs []*ValidationError
	add := func(field, rule string) { errs = append(errs, &ValidationError{Field: field, Rule: rule}) }

	cmd, ok := config["command"]
	switch s, isString := cmd.(string); {
	case !ok || cmd == nil:
		add("command", "is required by the raw_exec driver")
	case !isString:
		add("command", fmt.Sprintf("must be a string (got %s)", jsonKind(cmd)))
	case s == "":
		add("command", "must not be empty")
	}
	if args, ok := config["args"]; ok && args != nil {
		switch list := args.(type) {
		case []any:
			for i, a := range list {
				if _, ok := a.(string); !ok {
					add(fmt.Sprintf("args[%d]", i), fmt.Sprintf("must be a string (got %s)", jsonKind(a)))
				}
			}
		case []string:
		default:
			add("args", fmt.Sprintf("must be a list of strings (got %s)", jsonKind(args)))
		}
	}
	keys := make([]string, 0, len(config))
	for k := range config {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k != "command" && k != "args" {
			add(k, `is not a raw_exec option drover supports (only "command" and "args")`)
		}
	}
	return errs
}
