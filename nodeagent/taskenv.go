package nodeagent

import (
	"net"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/drover-sched/drover/drivers"
	"github.com/drover-sched/drover/structs"
)

// hostEnvDenylist names agent environment variables never passed on to
// tasks: credentials of the agent and its cloud. Nomad filters the host
// environment the same way (client option env.denylist).
var hostEnvDenylist = map[string]bool{
	"AWS_ACCESS_KEY_ID":                  true,
	"AWS_SECRET_ACCESS_KEY":              true,
	"AWS_SESSION_TOKEN":                  true,
	"AWS_SECURITY_TOKEN":                 true,
	"AWS_CONTAINER_CREDENTIALS_FULL_URI": true,
	"AWS_CONTAINER_AUTHORIZATION_TOKEN":  true,
	"GOOGLE_APPLICATION_CREDENTIALS":     true,
	"CONSUL_TOKEN":                       true,
	"CONSUL_HTTP_TOKEN":                  true,
	"VAULT_TOKEN":                        true,
	"NOMAD_TOKEN":                        true,
	"NOMAD_LICENSE":                      true,
	"DROVER_TOKEN":                       true,
}

// taskEnvSuffixes are the per-task variables, set under both the NOMAD_
// and DROVER_ prefixes.
const (
	envAllocID      = "ALLOC_ID"
	envShortAllocID = "SHORT_ALLOC_ID"
	envAllocName    = "ALLOC_NAME"
	envAllocIndex   = "ALLOC_INDEX"
	envJobID        = "JOB_ID"
	envJobName      = "JOB_NAME"
	envGroupName    = "GROUP_NAME"
	envTaskName     = "TASK_NAME"
	envNamespace    = "NAMESPACE"
	envRegion       = "REGION"
	envDatacenter   = "DC"
	envAllocDir     = "ALLOC_DIR"
	envTaskDir      = "TASK_DIR"
	envSecretsDir   = "SECRETS_DIR"
	envCPULimit     = "CPU_LIMIT"
	envMemoryLimit  = "MEMORY_LIMIT"
	envMemoryMax    = "MEMORY_MAX_LIMIT"
	envMetaPrefix   = "META_"
)

// taskEnv is the environment of one task, and the variables that
// ${...} interpolation in its config may use.
type taskEnv struct {
	vars map[string]string
	node *structs.Node
}

// buildTaskEnv assembles a task's environment: the agent's environment
// less credentials (not for image drivers, as in Nomad), then drover's
// variables (DROVER_* and Nomad's NOMAD_* names; the directories as the
// task sees them under its driver's filesystem isolation), then the task's
// own env block, whose values may interpolate ${VAR}, ${node.*}, ${attr.*}
// and ${meta.*}.
func buildTaskEnv(alloc *structs.Allocation, task *structs.Task, ad AllocDir, td TaskDir, node *structs.Node, hostEnv []string, fsi drivers.FSIsolation, network *drivers.NetworkIsolation) *taskEnv {
	if fsi == drivers.FSIsolationImage {
		hostEnv = nil
	}
	vars := make(map[string]string, len(hostEnv)+40)
	for _, kv := range hostEnv {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || hostEnvDenylist[k] {
			continue
		}
		vars[k] = v
	}
	set := func(suffix, v string) {
		vars["NOMAD_"+suffix] = v
		vars["DROVER_"+suffix] = v
	}
	set(envAllocID, alloc.ID)
	short := alloc.ID
	if len(short) > 8 {
		short = short[:8]
	}
	set(envShortAllocID, short)
	set(envAllocName, alloc.Name)
	set(envAllocIndex, strconv.FormatUint(uint64(alloc.Index()), 10))
	set(envJobID, alloc.JobID)
	set(envGroupName, alloc.TaskGroup)
	set(envTaskName, task.Name)
	set(envNamespace, alloc.Namespace)
	switch fsi {
	case drivers.FSIsolationChroot, drivers.FSIsolationImage:
		set(envAllocDir, drivers.TaskAllocPath)
		set(envTaskDir, drivers.TaskLocalPath)
		set(envSecretsDir, drivers.TaskSecretsPath)
	default:
		set(envAllocDir, ad.SharedDir())
		set(envTaskDir, td.LocalDir)
		set(envSecretsDir, td.SecretsDir)
	}
	if node != nil {
		set(envDatacenter, node.Datacenter)
	}
	var group *structs.TaskGroup
	if j := alloc.Job; j != nil {
		set(envJobName, j.Name)
		if j.Region != "" {
			set(envRegion, j.Region)
		}
		group = j.LookupTaskGroup(alloc.TaskGroup)
		setMeta(set, j.Meta)
	}
	if group != nil {
		setMeta(set, group.Meta)
	}
	setMeta(set, task.Meta)
	setPorts(vars, alloc.AllocatedResources)
	setAllocNetwork(vars, alloc.AllocatedResources, network)
	if r := task.Resources; r != nil {
		set(envCPULimit, strconv.Itoa(r.CPU))
		set(envMemoryLimit, strconv.Itoa(r.MemoryMB))
		if r.MemoryMaxMB > 0 {
			set(envMemoryMax, strconv.Itoa(r.MemoryMaxMB))
		}
	}
	env := &taskEnv{vars: vars, node: node}
	// The task's own variables come last and win; they may refer to the
	// variables above.
	keys := make([]string, 0, len(task.Env))
	for k := range task.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	resolved := make(map[string]string, len(keys))
	for _, k := range keys {
		resolved[k] = env.interpolate(task.Env[k])
	}
	for k, v := range resolved {
		vars[k] = v
	}
	return env
}

// setPorts sets the variables of the alloc's group network ports, as Nomad
// does for host networking: for each port labelled L (non-alphanumerics
// in L become underscores), NOMAD_IP_L and NOMAD_HOST_IP_L (the node's
// address), NOMAD_HOST_PORT_L (the host port), NOMAD_PORT_L and
// NOMAD_ALLOC_PORT_L (the port the task listens on: the mapped port `to`
// when set, else the host port), NOMAD_ADDR_L and NOMAD_HOST_ADDR_L
// (address:host port). Ports given only as the alloc's network (no port
// mappings) get NOMAD_PORT_L and NOMAD_HOST_PORT_L, as Nomad's fallback.
func setPorts(vars map[string]string, ar *structs.AllocatedResources) {
	if ar == nil {
		return
	}
	if len(ar.Shared.Ports) == 0 {
		for _, n := range ar.Shared.Networks {
			for _, p := range append(append([]structs.Port(nil), n.ReservedPorts...), n.DynamicPorts...) {
				l, port := structs.EnvLabel(p.Label), strconv.Itoa(p.Value)
				vars["NOMAD_PORT_"+l] = port
				if p.To > 0 {
					vars["NOMAD_PORT_"+l] = strconv.Itoa(p.To)
				}
				vars["NOMAD_HOST_PORT_"+l] = port
			}
		}
		return
	}
	for _, p := range ar.Shared.Ports {
		l, host := structs.EnvLabel(p.Label), strconv.Itoa(p.Value)
		inTask := host
		if p.To > 0 {
			inTask = strconv.Itoa(p.To)
		}
		addr := net.JoinHostPort(p.HostIP, host)
		vars["NOMAD_IP_"+l] = p.HostIP
		vars["NOMAD_HOST_IP_"+l] = p.HostIP
		vars["NOMAD_ADDR_"+l] = addr
		vars["NOMAD_HOST_ADDR_"+l] = addr
		vars["NOMAD_PORT_"+l] = inTask
		vars["NOMAD_ALLOC_PORT_"+l] = inTask
		vars["NOMAD_HOST_PORT_"+l] = host
	}
}

// setAllocNetwork adds, for an alloc in its own network namespace (bridge
// mode) whose address is known, Nomad's variables of each port inside it:
// NOMAD_ALLOC_IP_L (the namespace's address) and NOMAD_ALLOC_ADDR_L
// (that address and the port inside, `to` or the host port's number).
// Tasks of the group reach each other on localhost at NOMAD_PORT_L too.
func setAllocNetwork(vars map[string]string, ar *structs.AllocatedResources, n *drivers.NetworkIsolation) {
	if ar == nil || n == nil || n.IP == "" {
		return
	}
	for _, p := range ar.Shared.Ports {
		l, inside := structs.EnvLabel(p.Label), p.Value
		if p.To > 0 {
			inside = p.To
		}
		vars["NOMAD_ALLOC_IP_"+l] = n.IP
		vars["NOMAD_ALLOC_ADDR_"+l] = net.JoinHostPort(n.IP, strconv.Itoa(inside))
	}
}

// setMeta sets META_<key> for each meta entry, as written and upper-cased.
func setMeta(set func(suffix, v string), meta map[string]string) {
	for k, v := range meta {
		set(envMetaPrefix+k, v)
		if up := strings.ToUpper(k); up != k {
			set(envMetaPrefix+up, v)
		}
	}
}

// list returns the environment as KEY=value entries, sorted.
func (e *taskEnv) list() []string {
	out := make([]string, 0, len(e.vars))
	for k, v := range e.vars {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// copyVars returns the variables as a new map.
func (e *taskEnv) copyVars() map[string]string {
	out := make(map[string]string, len(e.vars))
	for k, v := range e.vars {
		out[k] = v
	}
	return out
}

// interpolateConfig returns a copy of a task's driver config with ${...}
// interpolated in every string, as Nomad interpolates task config.
func (e *taskEnv) interpolateConfig(config map[string]any) map[string]any {
	if config == nil {
		return nil
	}
	return e.interpolateValue(config).(map[string]any)
}

func (e *taskEnv) interpolateValue(v any) any {
	switch x := v.(type) {
	case string:
		return e.interpolate(x)
	case []string:
		out := make([]any, len(x))
		for i, s := range x {
			out[i] = e.interpolate(s)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, item := range x {
			out[i] = e.interpolateValue(item)
		}
		return out
	case []map[string]any:
		out := make([]any, len(x))
		for i, item := range x {
			out[i] = e.interpolateValue(item)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, item := range x {
			out[k] = e.interpolateValue(item)
		}
		return out
	case map[string]string:
		out := make(map[string]any, len(x))
		for k, s := range x {
			out[k] = e.interpolate(s)
		}
		return out
	}
	return v
}

// lookup resolves one interpolation name.
func (e *taskEnv) lookup(name string) (string, bool) {
	if v, ok := e.vars[name]; ok {
		return v, true
	}
	n := e.node
	if n == nil {
		return "", false
	}
	switch name {
	case "node.unique.id":
		return n.ID, true
	case "node.unique.name":
		return n.Name, true
	case "node.datacenter":
		return n.Datacenter, true
	case "node.class":
		return n.NodeClass, true
	case "node.pool":
		return n.NodePool, true
	}
	if k, ok := strings.CutPrefix(name, "attr."); ok {
		v, ok := n.Attributes[k]
		return v, ok
	}
	if k, ok := strings.CutPrefix(name, "meta."); ok {
		v, ok := n.Meta[k]
		return v, ok
	}
	if k, ok := strings.CutPrefix(name, "env."); ok {
		v, ok := e.vars[k]
		return v, ok
	}
	return "", false
}

// interpolate replaces ${name} in s by its value; unknown names are left
// as written, as Nomad does.
func (e *taskEnv) interpolate(s string) string {
	if !strings.Contains(s, "${") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		j := strings.IndexByte(s[i+2:], '}')
		if j < 0 {
			b.WriteString(s)
			return b.String()
		}
		name := s[i+2 : i+2+j]
		b.WriteString(s[:i])
		if v, ok := e.lookup(name); ok {
			b.WriteString(v)
		} else {
			b.WriteString(s[i : i+3+j])
		}
		s = s[i+3+j:]
	}
}

// agentEnviron is the agent's environment, the base of every task's.
var agentEnviron = os.Environ
