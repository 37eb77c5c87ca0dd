package docker

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/drover-sched/drover/drivers"
	"github.com/drover-sched/drover/structs"
)

// Labels drover puts on its containers, to find them again (after an agent
// restart, or for an alloc whose local state was lost).
const (
	labelAllocID   = "drover.alloc_id"
	labelJobID     = "drover.job_id"
	labelNamespace = "drover.namespace"
	labelTaskGroup = "drover.task_group"
	labelTaskName  = "drover.task_name"
	labelTaskID    = "drover.task_id"
)

// containerName is Nomad's: <task>-<alloc ID>.
func containerName(cfg *drivers.TaskConfig) string { return cfg.Name + "-" + cfg.AllocID }

// createOptions turns a task's launch config into the container's.
func (d *Driver) createOptions(cfg *drivers.TaskConfig, tc *TaskConfig) (client.ContainerCreateOptions, error) {
	var none client.ContainerCreateOptions
	if tc.Privileged && !d.opts.DockerAllowPrivileged {
		return none, errors.New("privileged containers are not allowed on this node (the agent's -docker-allow-privileged is off)")
	}
	exposed, bindings, err := portBindings(cfg, tc)
	if err != nil {
		return none, err
	}
	labels := map[string]string{}
	for k, v := range tc.Labels {
		labels[k] = v
	}
	labels[labelAllocID] = cfg.AllocID
	labels[labelJobID] = cfg.JobID
	labels[labelNamespace] = cfg.Namespace
	labels[labelTaskGroup] = cfg.TaskGroup
	labels[labelTaskName] = cfg.Name
	labels[labelTaskID] = cfg.ID

	cc := &container.Config{
		Image:        tc.Image,
		Env:          cfg.EnvList(),
		Labels:       labels,
		WorkingDir:   tc.WorkDir,
		Hostname:     tc.Hostname,
		User:         cfg.User,
		Tty:          tc.TTY,
		OpenStdin:    tc.Interactive,
		ExposedPorts: exposed,
	}
	if tc.Command != "" {
		cc.Cmd = append([]string{tc.Command}, tc.Args...)
	} else if len(tc.Args) > 0 {
		cc.Cmd = tc.Args
	}
	if len(tc.Entrypoint) > 0 {
		cc.Entrypoint = tc.Entrypoint
	}

	// The alloc's directories, mounted as Nomad mounts them.
	binds := []string{
		cfg.SharedDir + ":" + drivers.TaskAllocPath,
		cfg.LocalDir + ":" + drivers.TaskLocalPath,
		cfg.SecretsDir + ":" + drivers.TaskSecretsPath,
	}
	for _, v := range tc.Volumes {
		b, err := d.bind(cfg, v)
		if err != nil {
			return none, err
		}
		binds = append(binds, b)
	}
	var mounts []mount.Mount
	// Host volumes (volume_mount): bind mounts the job's group asked for.
	for _, m := range cfg.Mounts {
		mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: m.HostPath, Target: m.TaskPath, ReadOnly: m.ReadOnly})
	}
	for _, m := range tc.Mounts {
		mm, err := d.mount(cfg, m)
		if err != nil {
			return none, err
		}
		mounts = append(mounts, mm)
	}

	r := cfg.Resources
	limit := int64(r.LimitMB()) << 20
	if hard := int64(tc.MemoryHardLimit) << 20; hard > limit {
		limit = hard
	}
	res := container.Resources{
		// CPU shares from MHz, as Nomad; memory: the hard limit, with
		// the task's memory as the soft reservation when they differ.
		CPUShares:  int64(max(r.CPU, 2)),
		Memory:     limit,
		MemorySwap: limit,
	}
	if soft := int64(r.MemoryMB) << 20; soft < limit {
		res.MemoryReservation = soft
	}
	for name, v := range tc.Ulimit {
		soft, hard, err := parseUlimit(v)
		if err != nil {
			return none, fmt.Errorf("ulimit %s: %w", name, err)
		}
		res.Ulimits = append(res.Ulimits, &container.Ulimit{Name: name, Soft: soft, Hard: hard})
	}
	var dns []netip.Addr
	for _, s := range tc.DNSServers {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return none, fmt.Errorf("dns_servers: %w", err)
		}
		dns = append(dns, a)
	}
	logType := tc.Logging.Type
	if logType == "" {
		logType = "json-file"
	}
	hc := &container.HostConfig{
		Binds:          binds,
		Mounts:         mounts,
		NetworkMode:    container.NetworkMode(tc.NetworkMode),
		PortBindings:   bindings,
		Privileged:     tc.Privileged,
		Resources:      res,
		CapAdd:         tc.CapAdd,
		CapDrop:        tc.CapDrop,
		DNS:            dns,
		DNSSearch:      tc.DNSSearchDomains,
		DNSOptions:     tc.DNSOptions,
		ExtraHosts:     tc.ExtraHosts,
		SecurityOpt:    tc.SecurityOpt,
		Sysctls:        tc.Sysctl,
		IpcMode:        container.IpcMode(tc.IPCMode),
		PidMode:        container.PidMode(tc.PIDMode),
		UTSMode:        container.UTSMode(tc.UTSMode),
		ShmSize:        tc.ShmSize,
		ReadonlyRootfs: tc.ReadonlyRootfs,
		LogConfig:      container.LogConfig{Type: logType, Config: tc.Logging.Config},
	}
	if tc.Init {
		init := true
		hc.Init = &init
	}
	if n := cfg.Network; n != nil {
		// The alloc's namespace: its pause container's network, host
		// name, hosts and DNS files.
		if err := bridgeConflicts(tc); err != nil {
			return none, err
		}
		hc.NetworkMode = container.NetworkMode("container:" + n.SandboxID)
	}
	return client.ContainerCreateOptions{Name: containerName(cfg), Config: cc, HostConfig: hc}, nil
}

// portBindings publishes the group network ports the task names in
// `ports`, as Nomad's docker driver: the alloc's host port (on the node's
// address) is bound to the port inside the container — the port's `to`,
// or the host port's own number when it has none — for TCP and UDP. A task
// in its alloc's network namespace (bridge mode) publishes nothing: the
// namespace's pause container publishes every port of the alloc, and
// Docker allows no port publishing with network_mode container:<id>.
func portBindings(cfg *drivers.TaskConfig, tc *TaskConfig) (network.PortSet, network.PortMap, error) {
	if len(tc.Ports) == 0 || cfg.Network != nil {
		return nil, nil, nil
	}
	var ports []structs.AllocatedPortMapping
	for _, label := range tc.Ports {
		i := slices.IndexFunc(cfg.Ports, func(p structs.AllocatedPortMapping) bool { return p.Label == label })
		if i < 0 {
			return nil, nil, fmt.Errorf("ports: the alloc holds no port labelled %q (the group's network has none)", label)
		}
		ports = append(ports, cfg.Ports[i])
	}
	return publish(ports)
}

// publish binds each port's host port Value (on its HostIP) to To inside
// the container (To <= 0: the same number), for TCP and UDP.
func publish(ports []structs.AllocatedPortMapping) (network.PortSet, network.PortMap, error) {
	if len(ports) == 0 {
		return nil, nil, nil
	}
	exposed, bindings := network.PortSet{}, network.PortMap{}
	for _, p := range ports {
		inside := p.To
		if inside <= 0 {
			inside = p.Value
		}
		var hostIP netip.Addr
		if p.HostIP != "" {
			a, err := netip.ParseAddr(p.HostIP)
			if err != nil {
				return nil, nil, fmt.Errorf("ports: port %q: host IP: %w", p.Label, err)
			}
			hostIP = a
		}
		for _, proto := range []network.IPProtocol{network.TCP, network.UDP} {
			cp, ok := network.PortFrom(uint16(inside), proto)
			if !ok {
				return nil, nil, fmt.Errorf("ports: port %q: %d/%s is not a port", p.Label, inside, proto)
			}
			exposed[cp] = struct{}{}
			bindings[cp] = append(bindings[cp], network.PortBinding{HostIP: hostIP, HostPort: strconv.Itoa(p.Value)})
		}
	}
	return exposed, bindings, nil
}

// hostPath resolves a volume's host path: relative paths are inside the
// task dir; absolute ones need volumes enabled on the agent.
func (d *Driver) hostPath(cfg *drivers.TaskConfig, p string) (string, error) {
	if !filepath.IsAbs(p) {
		abs := filepath.Join(cfg.TaskDir, p)
		if abs != cfg.TaskDir && !strings.HasPrefix(abs, cfg.TaskDir+"/") {
			return "", fmt.Errorf("volume path %q leaves the task dir", p)
		}
		return abs, nil
	}
	if !d.opts.DockerVolumesEnabled {
		return "", fmt.Errorf("host volume %q: volumes outside the task dir are not enabled on this node (the agent's -docker-volumes-enabled, Nomad's volumes.enabled)", p)
	}
	return p, nil
}

func (d *Driver) bind(cfg *drivers.TaskConfig, v string) (string, error) {
	parts := strings.Split(v, ":")
	if len(parts) < 2 {
		return "", fmt.Errorf("volume %q: want host_path:container_path", v)
	}
	host, err := d.hostPath(cfg, parts[0])
	if err != nil {
		return "", err
	}
	parts[0] = host
	return strings.Join(parts, ":"), nil
}

func (d *Driver) mount(cfg *drivers.TaskConfig, m Mount) (mount.Mount, error) {
	out := mount.Mount{Target: m.Target, Source: m.Source, ReadOnly: m.Readonly}
	switch m.Type {
	case "bind":
		src, err := d.hostPath(cfg, m.Source)
		if err != nil {
			return out, err
		}
		out.Type, out.Source = mount.TypeBind, src
		if m.BindOptions.Propagation != "" {
			out.BindOptions = &mount.BindOptions{Propagation: mount.Propagation(m.BindOptions.Propagation)}
		}
	case "tmpfs":
		out.Type = mount.TypeTmpfs
		out.TmpfsOptions = &mount.TmpfsOptions{SizeBytes: m.TmpfsOptions.Size}
		if m.TmpfsOptions.Mode != 0 {
			out.TmpfsOptions.Mode = os.FileMode(m.TmpfsOptions.Mode)
		}
	default:
		out.Type = mount.TypeVolume
		vo := m.VolumeOptions
		out.VolumeOptions = &mount.VolumeOptions{NoCopy: vo.NoCopy, Labels: vo.Labels}
		if vo.DriverConfig.Name != "" {
			out.VolumeOptions.DriverConfig = &mount.Driver{Name: vo.DriverConfig.Name, Options: vo.DriverConfig.Options}
		}
	}
	return out, nil
}

// bridgeConflicts refuses the options Docker does not allow on a container
// that joins another's network (the task's group network in bridge mode):
// they belong to the alloc's network, not to one task. Submission refuses
// them too (TaskConfig.Rules).
func bridgeConflicts(tc *TaskConfig) error {
	for _, f := range []struct {
		name string
		set  bool
	}{{"network_mode", tc.NetworkMode != ""}, {"hostname", tc.Hostname != ""}, {"dns_servers", len(tc.DNSServers) > 0},
		{"dns_search_domains", len(tc.DNSSearchDomains) > 0}, {"dns_options", len(tc.DNSOptions) > 0}, {"extra_hosts", len(tc.ExtraHosts) > 0}} {
		if f.set {
			return fmt.Errorf("%s: must not be set on a task whose group network is in bridge mode: the group's tasks share one network (set the network block's hostname instead of the task's)", f.name)
		}
	}
	return nil
}
