package jobspec

import (
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-sched/drover/structs"
)

// Nomad's bounds on a check's interval and timeout.
const (
	MinCheckInterval = time.Second
	MinCheckTimeout  = time.Second
)

// checkServicesInput rejects, on service blocks as written, what drover
// cannot honour: the Consul provider and every Consul-only setting
// (connect, identity, weights, canary_meta, tagged_addresses,
// enable_tag_override, kind, cluster; in checks grpc, expose, advertise,
// notes, tls_server_name and the success/failure counters). It also sets
// an empty provider to "nomad" — drover's registry is the only one — before
// Canonicalize would default it to "consul".
func checkServicesInput(ss []*api.Service, path string, errs *errorList) {
	for i, s := range ss {
		if s == nil {
			errs.add(indexed(path, i), "must not be null")
			continue
		}
		sp := named(path, i, s.Name)
		switch s.Provider {
		case "":
			s.Provider = structs.ServiceProviderNomad
		case structs.ServiceProviderNomad:
		case structs.ServiceProviderConsul:
			errs.add(join(sp, "Provider"), "provider %q is not supported by drover (it has no Consul integration): use provider = %q, drover's own service registry", s.Provider, structs.ServiceProviderNomad)
		default:
			errs.add(join(sp, "Provider"), "unknown provider %q (drover supports %q)", s.Provider, structs.ServiceProviderNomad)
		}
		consulOnly := func(field string) {
			errs.add(join(sp, field), "is a Consul setting, which provider %q does not support", structs.ServiceProviderNomad)
		}
		if s.Connect != nil {
			errs.add(join(sp, "Connect"), "connect block (Consul Connect) is not supported by drover")
		}
		if s.Identity != nil {
			consulOnly("Identity")
		}
		if s.Weights != nil {
			consulOnly("Weights")
		}
		if len(s.CanaryMeta) > 0 {
			consulOnly("CanaryMeta")
		}
		if len(s.TaggedAddresses) > 0 {
			consulOnly("TaggedAddresses")
		}
		if s.EnableTagOverride {
			consulOnly("EnableTagOverride")
		}
		if s.Kind != "" {
			consulOnly("Kind")
		}
		if s.Cluster != "" && s.Cluster != "default" {
			consulOnly("Cluster")
		}
		for j := range s.Checks {
			c := &s.Checks[j]
			cp := named(join(sp, "Checks"), j, c.Name)
			if strings.EqualFold(c.Type, structs.ServiceCheckGRPC) {
				errs.add(join(cp, "Type"), "grpc checks are not supported by drover yet (http, tcp or script)")
			}
			if c.GRPCService != "" {
				errs.add(join(cp, "GRPCService"), "grpc checks are not supported by drover yet (http, tcp or script)")
			}
			if c.GRPCUseTLS {
				errs.add(join(cp, "GRPCUseTLS"), "grpc checks are not supported by drover yet (http, tcp or script)")
			}
			if c.Expose {
				errs.add(join(cp, "Expose"), "expose is part of Consul Connect, which drover does not support")
			}
			checkConsulOnly := func(field string) {
				errs.add(join(cp, field), "is a Consul check setting, which provider %q does not support", structs.ServiceProviderNomad)
			}
			if c.Advertise != "" {
				checkConsulOnly("Advertise")
			}
			if c.Notes != "" {
				checkConsulOnly("Notes")
			}
			if c.TLSServerName != "" {
				checkConsulOnly("TLSServerName")
			}
			if c.SuccessBeforePassing != 0 {
				checkConsulOnly("SuccessBeforePassing")
			}
			if c.FailuresBeforeCritical != 0 {
				checkConsulOnly("FailuresBeforeCritical")
			}
			if c.FailuresBeforeWarning != 0 {
				checkConsulOnly("FailuresBeforeWarning")
			}
		}
	}
}

// convertServices maps canonicalized api services onto drover's; task is
// the task they belong to ("" for group services). Check types are
// lower-cased, as Nomad does; check_restart is already the service's
// merged with the check's (Canonicalize).
func convertServices(ss []*api.Service, task string) []*structs.Service {
	if len(ss) == 0 {
		return nil
	}
	out := make([]*structs.Service, 0, len(ss))
	for _, s := range ss {
		c := &structs.Service{
			Name:        s.Name,
			TaskName:    s.TaskName,
			PortLabel:   s.PortLabel,
			AddressMode: s.AddressMode,
			Address:     s.Address,
			Tags:        cloneSlice(s.Tags),
			CanaryTags:  cloneSlice(s.CanaryTags),
			Meta:        cloneMap(s.Meta),
			OnUpdate:    s.OnUpdate,
			Provider:    s.Provider,
		}
		if task != "" {
			c.TaskName = task
		}
		for _, sc := range s.Checks {
			check := &structs.ServiceCheck{
				Name:          sc.Name,
				Type:          strings.ToLower(sc.Type),
				Command:       sc.Command,
				Args:          cloneSlice(sc.Args),
				Path:          sc.Path,
				Protocol:      sc.Protocol,
				Method:        sc.Method,
				Body:          sc.Body,
				TLSSkipVerify: sc.TLSSkipVerify,
				PortLabel:     sc.PortLabel,
				AddressMode:   sc.AddressMode,
				Interval:      sc.Interval,
				Timeout:       sc.Timeout,
				InitialStatus: sc.InitialStatus,
				TaskName:      sc.TaskName,
				OnUpdate:      sc.OnUpdate,
			}
			if len(sc.Header) > 0 {
				check.Header = make(map[string][]string, len(sc.Header))
				for k, v := range sc.Header {
					check.Header[k] = cloneSlice(v)
				}
			}
			if task != "" && check.TaskName == "" {
				check.TaskName = task
			}
			if r := sc.CheckRestart; r != nil {
				check.CheckRestart = &structs.CheckRestart{Limit: r.Limit, Grace: deref(r.Grace), IgnoreWarnings: r.IgnoreWarnings}
			}
			c.Checks = append(c.Checks, check)
		}
		out = append(out, c)
	}
	return out
}

// finishServiceNames applies Nomad's submission-time interpolation of
// service names (${JOB}, ${TASKGROUP}, ${TASK}, ${BASE}) and names the
// checks that have no name `service: "<name>" check`.
func finishServiceNames(j *structs.Job) {
	for _, tg := range j.TaskGroups {
		finish := func(ss []*structs.Service, task string) {
			for _, s := range ss {
				s.Name = structs.InterpolateServiceName(s.Name, j.Name, tg.Name, task)
				for _, c := range s.Checks {
					if c.Name == "" {
						c.Name = "service: " + strconv.Quote(s.Name) + " check"
					}
				}
			}
		}
		finish(tg.Services, "")
		for _, t := range tg.Tasks {
			finish(t.Services, t.Name)
		}
	}
}

// serviceNameChars is what a service name may hold once its ${...}
// references are set aside: RFC 1123 labels (letters, digits, dashes, not
// starting or ending with a dash, at most 63), as Nomad requires.
var (
	validServiceName = regexp.MustCompile(`^(?i:[a-z0-9]|[a-z0-9][a-z0-9\-]{0,61}[a-z0-9])$`)
	interpolation    = regexp.MustCompile(`\$\{[^}]*\}`)
	serviceNameChars = regexp.MustCompile(`^(?i:[a-z0-9\-]*)$`)
)

// httpMethods are the methods an http check may use.
var httpMethods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"}

// validateServices applies Nomad's rules on a group's service blocks and
// those of its tasks: names (RFC 1123 once interpolated), provider,
// address mode and address, ports (a label of the group's network or a
// number), on_update, unique name and port per group, and each check's
// rules (see validateCheck).
func validateServices(tg *structs.TaskGroup, gp string, errs *errorList) {
	labels := groupPortLabels(tg)
	seen := map[string]string{}
	each := func(ss []*structs.Service, path, task string) {
		for i, s := range ss {
			if s == nil {
				errs.add(indexed(path, i), "must not be null")
				continue
			}
			sp := named(path, i, s.Name)
			validateService(tg, s, sp, task, labels, errs)
			key := s.Name + "\x00" + s.PortLabel
			if other, dup := seen[key]; dup {
				errs.add(join(sp, "Name"), "service %q on port %q is already defined by %s: a group's services must differ in name or port", s.Name, s.PortLabel, other)
			} else {
				seen[key] = sp
			}
		}
	}
	each(tg.Services, join(gp, "Services"), "")
	for i, t := range tg.Tasks {
		if t != nil {
			each(t.Services, join(taskPath(gp, i, t.Name), "Services"), t.Name)
		}
	}
}

func validateService(tg *structs.TaskGroup, s *structs.Service, sp, task string, labels []string, errs *errorList) {
	switch rest := interpolation.ReplaceAllString(s.Name, ""); {
	case s.Name == "":
		errs.add(join(sp, "Name"), "must be set")
	case rest == s.Name && !validServiceName.MatchString(s.Name),
		rest != s.Name && !serviceNameChars.MatchString(rest):
		errs.add(join(sp, "Name"), "must be valid per RFC 1123: letters, digits and dashes, at most 63, not starting or ending with a dash (got %q)", s.Name)
	}
	if s.Provider != structs.ServiceProviderNomad {
		errs.add(join(sp, "Provider"), "must be %q (drover's service registry; got %q)", structs.ServiceProviderNomad, s.Provider)
	}
	validateAddressMode(s.AddressMode, join(sp, "AddressMode"), []string{structs.AddressModeAuto, structs.AddressModeHost, structs.AddressModeAlloc}, errs)
	if s.Address != "" && s.AddressMode != structs.AddressModeAuto {
		errs.add(join(sp, "Address"), "can only be set with address_mode %q (got %q)", structs.AddressModeAuto, s.AddressMode)
	}
	if s.PortLabel != "" {
		if n, err := strconv.Atoi(s.PortLabel); err == nil {
			switch {
			case n < 1 || n > structs.MaxValidPort:
				errs.add(join(sp, "PortLabel"), "port number must be between 1 and %d (got %d)", structs.MaxValidPort, n)
			case s.Address == "" && s.AddressMode != structs.AddressModeAlloc:
				errs.add(join(sp, "PortLabel"), "a port number (%d) needs address_mode %q or an address; otherwise name a port label of the group's network", n, structs.AddressModeAlloc)
			}
		} else if !slices.Contains(labels, s.PortLabel) {
			errs.add(join(sp, "PortLabel"), "port label %q is not a port of the group's network (ports: %s)", s.PortLabel, portList(labels))
		}
	}
	validateOnUpdate(s.OnUpdate, join(sp, "OnUpdate"), false, errs)
	if task == "" && s.TaskName != "" && tg.LookupTask(s.TaskName) == nil {
		errs.add(join(sp, "TaskName"), "task %q is not a task of the group", s.TaskName)
	}
	if task != "" && s.TaskName != task {
		errs.add(join(sp, "TaskName"), "a task's service belongs to its task %q (got %q)", task, s.TaskName)
	}
	names := map[string]int{}
	for i, c := range s.Checks {
		if c == nil {
			errs.add(indexed(join(sp, "Checks"), i), "must not be null")
			continue
		}
		cp := checkPath(join(sp, "Checks"), i, s.Name, c.Name)
		if j, dup := names[c.Name]; dup {
			errs.add(join(cp, "Name"), "check %q is already the name of Checks[%d]: check names must be unique in a service", c.Name, j)
		} else {
			names[c.Name] = i
		}
		validateCheck(tg, s, c, cp, task, labels, errs)
	}
}

// validateCheck applies Nomad's check rules: a known type (http, tcp or
// script; grpc refused), interval ≥ 1s, timeout ≥ 1s, http checks with a
// relative path, a known protocol and method, script checks with a
// command and a task (group services must name one), http and tcp checks
// with a port (the check's or the service's), a known address mode and
// initial status, check_restart with limit and grace ≥ 0, a known on_update.
func validateCheck(tg *structs.TaskGroup, s *structs.Service, c *structs.ServiceCheck, cp, task string, labels []string, errs *errorList) {
	switch c.Type {
	case structs.ServiceCheckHTTP, structs.ServiceCheckTCP, structs.ServiceCheckScript:
	case structs.ServiceCheckGRPC:
		errs.add(join(cp, "Type"), "grpc checks are not supported by drover yet (http, tcp or script)")
	case "":
		errs.add(join(cp, "Type"), "must be set (http, tcp or script)")
	default:
		errs.add(join(cp, "Type"), "unknown check type %q (http, tcp or script)", c.Type)
	}
	switch {
	case c.Interval == 0:
		errs.add(join(cp, "Interval"), "must be set (how often the check runs, at least %v)", MinCheckInterval)
	case c.Interval < MinCheckInterval:
		errs.add(join(cp, "Interval"), "must be at least %v (got %v)", MinCheckInterval, c.Interval)
	}
	switch {
	case c.Timeout == 0:
		errs.add(join(cp, "Timeout"), "must be set (how long one run may take, at least %v)", MinCheckTimeout)
	case c.Timeout < MinCheckTimeout:
		errs.add(join(cp, "Timeout"), "must be at least %v (got %v)", MinCheckTimeout, c.Timeout)
	}
	if c.Type == structs.ServiceCheckHTTP {
		if c.Path == "" {
			errs.add(join(cp, "Path"), "must be set for an http check (the request path, e.g. \"/health\")")
		} else if u, err := url.Parse(c.Path); err != nil {
			errs.add(join(cp, "Path"), "is not a valid URL path: %v", err)
		} else if u.IsAbs() || u.Host != "" {
			errs.add(join(cp, "Path"), "must be a relative path such as \"/health\" (got %q): the node agent dials the service's address", c.Path)
		}
		switch c.Protocol {
		case "", "http", "https":
		default:
			errs.add(join(cp, "Protocol"), "unknown protocol %q (http or https)", c.Protocol)
		}
		if c.Method != "" && !slices.Contains(httpMethods, strings.ToUpper(c.Method)) {
			errs.add(join(cp, "Method"), "unknown HTTP method %q (one of %s)", c.Method, strings.Join(httpMethods, ", "))
		}
		for k := range c.Header {
			if k == "" || strings.ContainsAny(k, " :\r\n") {
				errs.add(join(cp, "Header"), "header name %q must be non-empty, without spaces, colons or line breaks", k)
			}
		}
	}
	if c.Type == structs.ServiceCheckScript {
		if c.Command == "" {
			errs.add(join(cp, "Command"), "must be set for a script check (the command run in the task)")
		}
		switch {
		case task == "" && c.TaskName == "":
			errs.add(join(cp, "TaskName"), "must be set for a script check of a group service (the task the command runs in)")
		case task == "" && tg.LookupTask(c.TaskName) == nil:
			errs.add(join(cp, "TaskName"), "task %q is not a task of the group", c.TaskName)
		}
	}
	if task != "" && c.TaskName != task {
		errs.add(join(cp, "TaskName"), "a task service's checks run in its task %q; only group services' checks name a task (got %q)", task, c.TaskName)
	}
	port := c.PortLabel
	if port == "" {
		port = s.PortLabel
	}
	if (c.Type == structs.ServiceCheckHTTP || c.Type == structs.ServiceCheckTCP) && port == "" {
		errs.add(join(cp, "PortLabel"), "an %s check needs a port: set the check's port or its service's", c.Type)
	}
	if c.PortLabel != "" {
		if n, err := strconv.Atoi(c.PortLabel); err == nil {
			if n < 1 || n > structs.MaxValidPort {
				errs.add(join(cp, "PortLabel"), "port number must be between 1 and %d (got %d)", structs.MaxValidPort, n)
			}
		} else if !slices.Contains(labels, c.PortLabel) {
			errs.add(join(cp, "PortLabel"), "port label %q is not a port of the group's network (ports: %s)", c.PortLabel, portList(labels))
		}
	}
	if c.AddressMode != "" {
		validateAddressMode(c.AddressMode, join(cp, "AddressMode"), []string{structs.AddressModeHost, structs.AddressModeAlloc}, errs)
	}
	switch c.InitialStatus {
	case "", "passing", "warning", "critical":
	default:
		errs.add(join(cp, "InitialStatus"), "unknown status %q (passing, warning or critical)", c.InitialStatus)
	}
	if r := c.CheckRestart; r != nil {
		if r.Limit < 0 {
			errs.add(join(cp, "CheckRestart.Limit"), "must not be negative (got %d)", r.Limit)
		}
		if r.Grace < 0 {
			errs.add(join(cp, "CheckRestart.Grace"), "must not be negative (got %v)", r.Grace)
		}
	}
	validateOnUpdate(c.OnUpdate, join(cp, "OnUpdate"), true, errs)
}

// checkPath names a check by index, and by name when the user gave it one
// (not the default `service: "<name>" check`).
func checkPath(path string, i int, service, check string) string {
	if check == "service: "+strconv.Quote(service)+" check" {
		return indexed(path, i)
	}
	return named(path, i, check)
}

func validateAddressMode(mode, path string, allowed []string, errs *errorList) {
	switch {
	case slices.Contains(allowed, mode):
	case mode == structs.AddressModeDriver:
		errs.add(path, "address_mode %q is not supported by drover yet (%s)", mode, strings.Join(allowed, ", "))
	default:
		errs.add(path, "unknown address_mode %q (%s)", mode, strings.Join(allowed, ", "))
	}
}

func validateOnUpdate(v, path string, emptyOK bool, errs *errorList) {
	switch v {
	case structs.OnUpdateRequireHealthy, structs.OnUpdateIgnoreWarn, structs.OnUpdateIgnore:
	case "":
		if !emptyOK {
			errs.add(path, "must be set (%s, %s or %s)", structs.OnUpdateRequireHealthy, structs.OnUpdateIgnoreWarn, structs.OnUpdateIgnore)
		}
	default:
		errs.add(path, "unknown on_update %q (%s, %s or %s)", v, structs.OnUpdateRequireHealthy, structs.OnUpdateIgnoreWarn, structs.OnUpdateIgnore)
	}
}

func portList(labels []string) string {
	if len(labels) == 0 {
		return "none"
	}
	return strings.Join(labels, ", ")
}
