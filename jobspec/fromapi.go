package jobspec

import (
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-sched/drover/structs"
)

// FromAPI turns a job in Nomad's API form into drover's job: it rejects the
// blocks drover does not support (checked on the job as given, before
// defaults are filled in), canonicalizes j in place with the api module's
// Canonicalize (Nomad's defaults), converts it, and validates the result
// (see Validate). Errors are ValidationErrors.
func FromAPI(j *api.Job) (*structs.Job, error) {
	if j == nil {
		return nil, ValidationErrors{{Field: "Job", Rule: "is missing"}}
	}

	// 1. What can only be judged on the job as the user wrote it.
	var errs errorList
	checkInput(j, &errs)
	if !errs.empty() {
		return nil, errs.err()
	}
	disc := make([]disconnect, len(j.TaskGroups))
	for i, tg := range j.TaskGroups {
		disc[i] = disconnectOf(tg)
	}

	// 2. Nomad's defaults.
	j.Canonicalize()

	// 3. drover's job, and its validation.
	job := convertJob(j, disc)
	if err := Validate(job); err != nil {
		errs.addAll(err.(ValidationErrors))
	}
	if !errs.empty() {
		return nil, errs.err()
	}
	return job, nil
}

// checkInput rejects, on the job as given, null list elements (Canonicalize
// would crash on them), unsupported blocks and fields, and the rules that
// depend on what the user wrote rather than on the defaults: update and
// migrate blocks in batch jobs, and the disconnect settings.
func checkInput(j *api.Job, errs *errorList) {
	const jp = "Job"
	jobType := ""
	if j.Type != nil {
		jobType = *j.Type
	}
	systemType := jobType == api.JobTypeSystem || jobType == api.JobTypeSysbatch
	if systemType && j.Reschedule != nil {
		errs.add(join(jp, "Reschedule"), "system and sysbatch jobs must not have a reschedule policy (their allocs are replaced on their own node)")
	}
	checkPreferencesNotNull(j.Affinities, j.Spreads, jp, errs)
	if j.Multiregion != nil {
		errs.unsupported(jp, "multiregion")
	}
	if j.UI != nil {
		errs.unsupported(jp, "ui")
	}
	checkChildFieldsInput(j, jp, errs)
	if j.ConsulNamespace != nil && *j.ConsulNamespace != "" {
		errs.add(join(jp, "ConsulNamespace"), "Consul integration is not supported by drover yet")
	}
	if j.VaultNamespace != nil && *j.VaultNamespace != "" {
		errs.add(join(jp, "VaultNamespace"), "Vault integration is not supported by drover yet")
	}
	if j.VersionTag != nil {
		errs.add(join(jp, "VersionTag"), "job version tags are not supported by drover yet")
	}
	checkConstraintsNotNull(j.Constraints, join(jp, "Constraints"), errs)
	if jobType == api.JobTypeBatch || jobType == api.JobTypeSysbatch {
		if j.Update != nil {
			errs.add(join(jp, "Update"), "update block is not allowed for %s jobs (rolling updates are for service and system jobs)", jobType)
		}
	}
	if j.Migrate != nil && jobType != "" && jobType != api.JobTypeService {
		errs.add(join(jp, "Migrate"), "migrate block is not allowed for %s jobs", jobType)
	}

	for i, tg := range j.TaskGroups {
		if tg == nil {
			errs.add(indexed("Job.TaskGroups", i), "must not be null")
			continue
		}
		name := ""
		if tg.Name != nil {
			name = *tg.Name
		}
		checkGroupInput(tg, groupPath(i, name), jobType, errs)
	}
}

func checkGroupInput(tg *api.TaskGroup, gp, jobType string, errs *errorList) {
	checkPreferencesNotNull(tg.Affinities, tg.Spreads, gp, errs)
	checkVolumesInput(tg.Volumes, gp, errs)
	for i, n := range tg.Networks {
		checkNetworkInput(n, indexed(join(gp, "Networks"), i), errs)
	}
	checkServicesInput(tg.Services, join(gp, "Services"), errs)
	if tg.Consul != nil {
		errs.unsupported(gp, "consul")
	}
	checkConstraintsNotNull(tg.Constraints, join(gp, "Constraints"), errs)
	if jobType == api.JobTypeBatch || jobType == api.JobTypeSysbatch {
		if tg.Update != nil {
			errs.add(join(gp, "Update"), "update block is not allowed for %s jobs (rolling updates are for service and system jobs)", jobType)
		}
	}
	if tg.Migrate != nil && jobType != "" && jobType != api.JobTypeService {
		errs.add(join(gp, "Migrate"), "migrate block is not allowed for %s jobs", jobType)
	}
	if (jobType == api.JobTypeSystem || jobType == api.JobTypeSysbatch) && tg.ReschedulePolicy != nil {
		errs.add(join(gp, "ReschedulePolicy"), "system and sysbatch jobs must not have a reschedule policy (their allocs are replaced on their own node)")
	}
	checkDisconnectInput(tg, gp, errs)

	for i, t := range tg.Tasks {
		if t == nil {
			errs.add(indexed(join(gp, "Tasks"), i), "must not be null")
			continue
		}
		checkTaskInput(t, taskPath(gp, i, t.Name), errs)
	}
}

// checkDisconnectInput applies Nomad's rules on the disconnect block and
// the deprecated group fields it replaces, which can only be told apart
// before Canonicalize fills the block's defaults.
func checkDisconnectInput(tg *api.TaskGroup, gp string, errs *errorList) {
	maxDisc, stopAfter := tg.MaxClientDisconnect, tg.StopAfterClientDisconnect
	if maxDisc != nil && *maxDisc < 0 {
		errs.add(join(gp, "MaxClientDisconnect"), "must not be negative (got %v)", *maxDisc)
	}
	if stopAfter != nil && *stopAfter < 0 {
		errs.add(join(gp, "StopAfterClientDisconnect"), "must not be negative (got %v)", *stopAfter)
	}
	if maxDisc != nil && stopAfter != nil {
		errs.add(join(gp, "StopAfterClientDisconnect"), "cannot be set together with max_client_disconnect")
	}
	d := tg.Disconnect
	if d == nil {
		return
	}
	dp := join(gp, "Disconnect")
	lostAfter := time.Duration(0)
	if d.LostAfter != nil {
		lostAfter = *d.LostAfter
	}
	if lostAfter < 0 {
		errs.add(join(dp, "LostAfter"), "must not be negative (got %v)", lostAfter)
	}
	if d.StopOnClientAfter != nil && *d.StopOnClientAfter < 0 {
		errs.add(join(dp, "StopOnClientAfter"), "must not be negative (got %v)", *d.StopOnClientAfter)
	}
	if d.StopOnClientAfter != nil && lostAfter != 0 {
		errs.add(join(dp, "StopOnClientAfter"), "cannot be set together with lost_after")
	}
	if maxDisc != nil && lostAfter > 0 {
		errs.add(join(dp, "LostAfter"), "cannot be set together with the deprecated max_client_disconnect (use lost_after only)")
	}
	if stopAfter != nil && d.StopOnClientAfter != nil {
		errs.add(join(dp, "StopOnClientAfter"), "cannot be set together with the deprecated stop_after_client_disconnect (use stop_on_client_after only)")
	}
	if tg.PreventRescheduleOnLost != nil && *tg.PreventRescheduleOnLost && d.Replace != nil {
		errs.add(join(dp, "Replace"), "cannot be set together with the deprecated prevent_reschedule_on_lost (use replace only)")
	}
	if d.Reconcile != nil {
		switch r := *d.Reconcile; r {
		case "", api.ReconcileOptionBestScore:
		case api.ReconcileOptionLongestRunning, api.ReconcileOptionKeepOriginal, api.ReconcileOptionKeepReplacement:
			errs.add(join(dp, "Reconcile"), "reconcile = %q is not supported by drover yet (only %q)", r, api.ReconcileOptionBestScore)
		default:
			errs.add(join(dp, "Reconcile"), "unknown reconcile option %q (one of %s, %s, %s, %s)", r,
				api.ReconcileOptionBestScore, api.ReconcileOptionLongestRunning, api.ReconcileOptionKeepOriginal, api.ReconcileOptionKeepReplacement)
		}
	}
}

func checkTaskInput(t *api.Task, tp string, errs *errorList) {
	blocks := []struct {
		present bool
		name    string
	}{
		{t.Vault != nil, "vault"},
		{t.Consul != nil, "consul"},
		{t.CSIPluginConfig != nil, "csi_plugin"},
		{len(t.ScalingPolicies) > 0, "scaling"},
		{len(t.Secrets) > 0, "secret"},
		{t.Identity != nil, "identity"},
		{len(t.Identities) > 0, "identity"},
		{len(t.Actions) > 0, "action"},
		{t.Schedule != nil, "schedule"},
	}
	for _, b := range blocks {
		if b.present {
			errs.unsupported(tp, b.name)
		}
	}
	checkServicesInput(t.Services, join(tp, "Services"), errs)
	checkTemplatesInput(t.Templates, tp, errs)
	checkArtifactsInput(t.Artifacts, tp, errs)
	checkVolumeMountsInput(t.VolumeMounts, tp, errs)
	if t.Kind != "" {
		errs.add(join(tp, "Kind"), "task kind %q (Consul Connect) is not supported by drover yet", t.Kind)
	}
	checkConstraintsNotNull(t.Constraints, join(tp, "Constraints"), errs)
	checkPreferencesNotNull(t.Affinities, nil, tp, errs)
	if r := t.Resources; r != nil {
		rp := join(tp, "Resources")
		if len(r.Networks) > 0 {
			errs.unsupported(rp, "network")
		}
		if len(r.Devices) > 0 {
			errs.unsupported(rp, "device")
		}
		if r.NUMA != nil {
			errs.unsupported(rp, "numa")
		}
		if r.Cores != nil && *r.Cores != 0 {
			errs.add(join(rp, "Cores"), "reserving cores is not supported by drover yet (ask for cpu in MHz)")
		}
		if r.SecretsMB != nil && *r.SecretsMB != 0 {
			errs.add(join(rp, "SecretsMB"), "the secrets directory size is not supported by drover yet")
		}
		if r.IOPS != nil && *r.IOPS != 0 {
			errs.add(join(rp, "IOPS"), "iops was removed from Nomad's job format and is not supported")
		}
	}
}

// checkNetworkInput rejects, on a group network block as given, what
// drover's conversion does not keep: null blocks, the cni block, and
// ignore_collision.
func checkNetworkInput(n *api.NetworkResource, np string, errs *errorList) {
	if n == nil {
		errs.add(np, "must not be null")
		return
	}
	if n.CNI != nil {
		errs.unsupported(np, "cni")
	}
	for _, ports := range []struct {
		field string
		list  []api.Port
	}{{"ReservedPorts", n.ReservedPorts}, {"DynamicPorts", n.DynamicPorts}} {
		for i, p := range ports.list {
			if p.IgnoreCollision {
				errs.add(join(portPath(join(np, ports.field), i, p.Label), "IgnoreCollision"), "ignore_collision is not supported by drover yet (every host port is held by one alloc at a time)")
			}
		}
	}
}

func checkConstraintsNotNull(cs []*api.Constraint, path string, errs *errorList) {
	for i, c := range cs {
		if c == nil {
			errs.add(indexed(path, i), "must not be null")
		}
	}
}

// disconnect holds a group's effective disconnect settings, from the
// disconnect block or else the deprecated fields, read before Canonicalize.
type disconnect struct {
	lostAfter         *time.Duration
	stopAfter         *time.Duration
	preventReschedule bool
}

func disconnectOf(tg *api.TaskGroup) disconnect {
	var out disconnect
	if tg.MaxClientDisconnect != nil {
		out.lostAfter = durationPtr(*tg.MaxClientDisconnect)
	}
	if tg.StopAfterClientDisconnect != nil {
		out.stopAfter = durationPtr(*tg.StopAfterClientDisconnect)
	}
	if tg.PreventRescheduleOnLost != nil {
		out.preventReschedule = *tg.PreventRescheduleOnLost
	}
	if d := tg.Disconnect; d != nil {
		if d.LostAfter != nil && *d.LostAfter > 0 {
			out.lostAfter = durationPtr(*d.LostAfter)
		}
		if d.StopOnClientAfter != nil {
			out.stopAfter = durationPtr(*d.StopOnClientAfter)
		}
		if d.Replace != nil {
			out.preventReschedule = !*d.Replace
		}
	}
	return out
}

func durationPtr(d time.Duration) *time.Duration { return &d }

// convertJob maps a canonicalized api job onto drover's job.
func convertJob(j *api.Job, disc []disconnect) *structs.Job {
	out := &structs.Job{
		Region:      deref(j.Region),
		Namespace:   deref(j.Namespace),
		ID:          deref(j.ID),
		Name:        deref(j.Name),
		Type:        deref(j.Type),
		Priority:    deref(j.Priority),
		AllAtOnce:   deref(j.AllAtOnce),
		Datacenters: datacentersOrAll(j.Datacenters),
		NodePool:    deref(j.NodePool),
		Constraints: convertConstraints(j.Constraints),
		Affinities:  convertAffinities(j.Affinities),
		Spreads:     convertSpreads(j.Spreads),
		Update:      convertUpdate(j.Update),
		Meta:        cloneMap(j.Meta),
		Stop:        deref(j.Stop),

		Periodic:         convertPeriodic(j.Periodic),
		ParameterizedJob: convertParameterized(j.ParameterizedJob),
	}
	if out.NodePool == "" {
		// Nomad's server puts a job that names no pool in its namespace's
		// default pool; drover's namespaces all default to "default".
		out.NodePool = structs.DefaultNodePool
	}
	for i, tg := range j.TaskGroups {
		out.TaskGroups = append(out.TaskGroups, convertGroup(tg, disc[i]))
	}
	finishServiceNames(out)
	return out
}

func convertGroup(tg *api.TaskGroup, d disconnect) *structs.TaskGroup {
	out := &structs.TaskGroup{
		Name:                      deref(tg.Name),
		Count:                     deref(tg.Count),
		Constraints:               convertConstraints(tg.Constraints),
		Affinities:                convertAffinities(tg.Affinities),
		Spreads:                   convertSpreads(tg.Spreads),
		RestartPolicy:             convertRestart(tg.RestartPolicy),
		ReschedulePolicy:          convertReschedule(tg.ReschedulePolicy),
		Update:                    convertUpdate(tg.Update),
		Migrate:                   convertMigrate(tg.Migrate),
		Meta:                      cloneMap(tg.Meta),
		MaxClientDisconnect:       d.lostAfter,
		StopAfterClientDisconnect: d.stopAfter,
		PreventRescheduleOnLost:   d.preventReschedule,
	}
	if e := tg.EphemeralDisk; e != nil {
		out.EphemeralDisk = &structs.EphemeralDisk{Sticky: deref(e.Sticky), SizeMB: deref(e.SizeMB), Migrate: deref(e.Migrate)}
	}
	if tg.ShutdownDelay != nil {
		out.ShutdownDelay = durationPtr(*tg.ShutdownDelay)
	}
	if tg.MaxRunDuration != nil {
		out.MaxRunDuration = durationPtr(*tg.MaxRunDuration)
	}
	out.Volumes = convertVolumes(tg.Volumes)
	out.Scaling = convertScaling(tg.Scaling)
	out.Services = convertServices(tg.Services, "")
	for _, n := range tg.Networks {
		out.Networks = append(out.Networks, convertNetwork(n))
	}
	for _, t := range tg.Tasks {
		out.Tasks = append(out.Tasks, convertTask(t))
	}
	return out
}

func convertNetwork(n *api.NetworkResource) *structs.NetworkResource {
	out := &structs.NetworkResource{Mode: n.Mode, Device: n.Device, CIDR: n.CIDR, IP: n.IP, Hostname: n.Hostname, MBits: deref(n.MBits)}
	convert := func(ps []api.Port) []structs.Port {
		if ps == nil {
			return nil
		}
		out := make([]structs.Port, len(ps))
		for i, p := range ps {
			out[i] = structs.Port{Label: p.Label, Value: p.Value, To: p.To, HostNetwork: p.HostNetwork}
		}
		return out
	}
	out.ReservedPorts, out.DynamicPorts = convert(n.ReservedPorts), convert(n.DynamicPorts)
	if d := n.DNS; d != nil {
		out.DNS = &structs.DNSConfig{Servers: d.Servers, Searches: d.Searches, Options: d.Options}
	}
	return out
}

func convertTask(t *api.Task) *structs.Task {
	out := &structs.Task{
		Name:          t.Name,
		Driver:        t.Driver,
		User:          t.User,
		Config:        t.Config,
		Constraints:   convertConstraints(t.Constraints),
		Affinities:    convertAffinities(t.Affinities),
		Env:           cloneMap(t.Env),
		RestartPolicy: convertRestart(t.RestartPolicy),
		Meta:          cloneMap(t.Meta),
		KillTimeout:   deref(t.KillTimeout),
		Leader:        t.Leader,
		ShutdownDelay: t.ShutdownDelay,
		KillSignal:    t.KillSignal,
		Templates:     convertTemplates(t.Templates),
		Artifacts:     convertArtifacts(t.Artifacts),
		VolumeMounts:  convertVolumeMounts(t.VolumeMounts),
		Services:      convertServices(t.Services, t.Name),
	}
	if t.DispatchPayload != nil {
		out.DispatchPayload = &structs.DispatchPayloadConfig{File: t.DispatchPayload.File}
	}
	if t.Lifecycle != nil {
		out.Lifecycle = &structs.TaskLifecycle{Hook: t.Lifecycle.Hook, Sidecar: t.Lifecycle.Sidecar}
	}
	if r := t.Resources; r != nil {
		out.Resources = &structs.Resources{
			CPU:         deref(r.CPU),
			Cores:       deref(r.Cores),
			MemoryMB:    deref(r.MemoryMB),
			MemoryMaxMB: deref(r.MemoryMaxMB),
			DiskMB:      deref(r.DiskMB),
		}
	}
	if l := t.LogConfig; l != nil {
		out.LogConfig = &structs.LogConfig{
			MaxFiles:      deref(l.MaxFiles),
			MaxFileSizeMB: deref(l.MaxFileSizeMB),
			// Enabled is the pre-1.5.4 spelling of !Disabled.
			Disabled: deref(l.Disabled) || (l.Enabled != nil && !*l.Enabled),
		}
	}
	return out
}

func convertConstraints(cs []*api.Constraint) []*structs.Constraint {
	if cs == nil {
		return nil
	}
	out := make([]*structs.Constraint, len(cs))
	for i, c := range cs {
		out[i] = &structs.Constraint{LTarget: c.LTarget, RTarget: c.RTarget, Operand: c.Operand}
	}
	return out
}

func convertRestart(r *api.RestartPolicy) *structs.RestartPolicy {
	if r == nil {
		return nil
	}
	return &structs.RestartPolicy{
		Attempts:        deref(r.Attempts),
		Interval:        deref(r.Interval),
		Delay:           deref(r.Delay),
		Mode:            deref(r.Mode),
		RenderTemplates: deref(r.RenderTemplates),
	}
}

func convertReschedule(r *api.ReschedulePolicy) *structs.ReschedulePolicy {
	if r == nil {
		return nil
	}
	return &structs.ReschedulePolicy{
		Attempts:      deref(r.Attempts),
		Interval:      deref(r.Interval),
		Delay:         deref(r.Delay),
		DelayFunction: deref(r.DelayFunction),
		MaxDelay:      deref(r.MaxDelay),
		Unlimited:     deref(r.Unlimited),
	}
}

func convertUpdate(u *api.UpdateStrategy) *structs.UpdateStrategy {
	if u == nil {
		return nil
	}
	return &structs.UpdateStrategy{
		Stagger:          deref(u.Stagger),
		MaxParallel:      deref(u.MaxParallel),
		HealthCheck:      deref(u.HealthCheck),
		MinHealthyTime:   deref(u.MinHealthyTime),
		HealthyDeadline:  deref(u.HealthyDeadline),
		ProgressDeadline: deref(u.ProgressDeadline),
		Canary:           deref(u.Canary),
		AutoRevert:       deref(u.AutoRevert),
		AutoPromote:      deref(u.AutoPromote),
	}
}

func convertMigrate(m *api.MigrateStrategy) *structs.MigrateStrategy {
	if m == nil {
		return nil
	}
	return &structs.MigrateStrategy{
		MaxParallel:     deref(m.MaxParallel),
		HealthCheck:     deref(m.HealthCheck),
		MinHealthyTime:  deref(m.MinHealthyTime),
		HealthyDeadline: deref(m.HealthyDeadline),
	}
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func cloneSlice[T any](s []T) []T {
	if s == nil {
		return nil
	}
	return append([]T(nil), s...)
}

func cloneMap[K comparable, V any](m map[K]V) map[K]V {
	if m == nil {
		return nil
	}
	out := make(map[K]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// datacentersOrAll returns the job's datacenters, or ["*"] (every
// datacenter) when it names none, as Nomad since 1.5 stores it.
func datacentersOrAll(dcs []string) []string {
	if len(dcs) == 0 {
		return []string{"*"}
	}
	return cloneSlice(dcs)
}
