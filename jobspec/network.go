package jobspec

import (
	"net"
	"regexp"
	"strings"

	"github.com/drover-sched/drover/drivers/catalog"
	"github.com/drover-sched/drover/structs"
)

// validPortLabel is what a port label may hold: it names the port's
// environment variables (NOMAD_PORT_<label>, dashes becoming underscores)
// and a docker task's `ports` entries.
var validPortLabel = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,128}$`)

// validHostname is what a bridge network's hostname may be (RFC 1123 host
// names); one with ${...} is checked by the engine once interpolated on
// the node.
var validHostname = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(\.[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$`)

// validateNetworks applies Nomad's group network rules on what drover
// supports: one network block, host or bridge mode (a hostname only in
// bridge mode), unique port labels, static ports
// between 1 and 65535 and unique, dynamic ports without a value, mapped
// ports (to) between -1 and 65535, the default host network.
func validateNetworks(networks []*structs.NetworkResource, path string, errs *errorList) {
	if len(networks) > 1 {
		errs.add(path, "at most one network block per group is supported (got %d)", len(networks))
	}
	labels := map[string]string{}
	static := map[int]string{}
	for i, n := range networks {
		np := indexed(path, i)
		if n == nil {
			errs.add(np, "must not be null")
			continue
		}
		switch mode := n.Mode; {
		case mode == "" || mode == structs.NetworkModeHost || mode == structs.NetworkModeBridge:
		case mode == "none" || strings.HasPrefix(mode, "cni/"):
			errs.add(join(np, "Mode"), "network mode %q is not supported by drover yet (only %q and %q)", mode, structs.NetworkModeHost, structs.NetworkModeBridge)
		default:
			errs.add(join(np, "Mode"), "unknown network mode %q (drover supports %q and %q)", mode, structs.NetworkModeHost, structs.NetworkModeBridge)
		}
		if n.Hostname != "" {
			if n.Mode != structs.NetworkModeBridge {
				errs.add(join(np, "Hostname"), "a hostname is only set in bridge networking (mode %q)", structs.NetworkModeBridge)
			} else if !strings.Contains(n.Hostname, "${") && !validHostname.MatchString(n.Hostname) {
				errs.add(join(np, "Hostname"), "must be a valid host name: letters, digits, dashes and dots, at most 253 characters (got %q)", n.Hostname)
			}
		}
		for _, f := range []struct{ name, v string }{{"Device", n.Device}, {"CIDR", n.CIDR}, {"IP", n.IP}} {
			if f.v != "" {
				errs.add(join(np, f.name), "is the node's, set when an alloc is placed; a job must leave it empty (got %q)", f.v)
			}
		}
		if d := n.DNS; d != nil {
			if n.Mode != structs.NetworkModeBridge {
				errs.add(join(np, "DNS"), "a dns block is only supported in bridge networking by drover (mode %q): in host mode tasks use the node's resolver", structs.NetworkModeBridge)
			}
			for j, s := range d.Servers {
				if net.ParseIP(s) == nil {
					errs.add(indexed(join(join(np, "DNS"), "Servers"), j), "must be an IP address (got %q)", s)
				}
			}
			for _, list := range []struct {
				name string
				v    []string
			}{{"Searches", d.Searches}, {"Options", d.Options}} {
				for j, s := range list.v {
					if s == "" || strings.ContainsAny(s, " \t\n") {
						errs.add(indexed(join(join(np, "DNS"), list.name), j), "must be one word, not empty (got %q)", s)
					}
				}
			}
		}
		if n.MBits < 0 {
			errs.add(join(np, "MBits"), "must not be negative (got %d)", n.MBits)
		}
		check := func(field string, ports []structs.Port, dynamic bool) {
			for j, p := range ports {
				pp := portPath(join(np, field), j, p.Label)
				switch {
				case p.Label == "":
					errs.add(join(pp, "Label"), "must not be empty")
				case !validPortLabel.MatchString(p.Label):
					errs.add(join(pp, "Label"), "must be 1 to 128 letters, digits, underscores or dashes (got %q)", p.Label)
				default:
					if other, dup := labels[p.Label]; dup {
						errs.add(join(pp, "Label"), "port label %q is already used by %s: labels must be unique in a group", p.Label, other)
					} else {
						labels[p.Label] = pp
					}
				}
				switch {
				case dynamic && p.Value != 0:
					errs.add(join(pp, "Value"), "must be 0 for a dynamic port: the scheduler picks it (a static port is one of ReservedPorts; got %d)", p.Value)
				case !dynamic && (p.Value < 1 || p.Value > structs.MaxValidPort):
					errs.add(join(pp, "Value"), "static port must be between 1 and %d (got %d)", structs.MaxValidPort, p.Value)
				case !dynamic:
					if other, dup := static[p.Value]; dup {
						errs.add(join(pp, "Value"), "static port %d is already reserved by %s", p.Value, other)
					} else {
						static[p.Value] = pp
					}
				}
				if p.To < -1 || p.To > structs.MaxValidPort {
					errs.add(join(pp, "To"), "must be between -1 and %d (got %d)", structs.MaxValidPort, p.To)
				}
				if p.HostNetwork != "" && p.HostNetwork != structs.DefaultHostNetwork {
					errs.add(join(pp, "HostNetwork"), "host network %q is not supported by drover yet (nodes have only %q)", p.HostNetwork, structs.DefaultHostNetwork)
				}
			}
		}
		check("ReservedPorts", n.ReservedPorts, false)
		check("DynamicPorts", n.DynamicPorts, true)
	}
}

// groupPortLabels are the labels of a group's network ports (what a docker
// task may name in `ports`), or nil when it has none.
func groupPortLabels(tg *structs.TaskGroup) []string {
	var out []string
	for _, n := range tg.Networks {
		if n == nil {
			continue
		}
		for _, p := range n.ReservedPorts {
			out = append(out, p.Label)
		}
		for _, p := range n.DynamicPorts {
			out = append(out, p.Label)
		}
	}
	return out
}

// groupNetworkMode is the mode of the group's network block ("host" when
// it leaves it empty), or "" when it has none.
func groupNetworkMode(tg *structs.TaskGroup) string {
	for _, n := range tg.Networks {
		if n == nil {
			continue
		}
		if n.Mode == "" {
			return structs.NetworkModeHost
		}
		return n.Mode
	}
	return ""
}

// validateBridgeTasks: a group in bridge mode runs every task in one
// network namespace, which only drivers that can join one do (docker);
// drover cannot yet put raw_exec or exec tasks in one.
func validateBridgeTasks(tg *structs.TaskGroup, path string, errs *errorList) {
	if groupNetworkMode(tg) != structs.NetworkModeBridge {
		return
	}
	var can []string
	for _, b := range catalog.Builtins() {
		if b.BridgeNetwork {
			can = append(can, b.Name)
		}
	}
	for i, t := range tg.Tasks {
		if t == nil || t.Driver == "" {
			continue
		}
		if b, ok := catalog.Lookup(t.Driver); !ok || !b.BridgeNetwork {
			errs.add(join(indexed(path, 0), "Mode"), "network mode %q needs every task of the group on a driver that runs it in the group's network namespace (%s), but task %q (Tasks[%d]) uses %q, which drover cannot run in one yet",
				structs.NetworkModeBridge, strings.Join(can, ", "), t.Name, i, t.Driver)
		}
	}
}
