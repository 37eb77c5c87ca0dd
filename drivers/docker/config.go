package docker

import (
	"fmt"
	"net/netip"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/drover-sched/drover/drivers"
	"github.com/drover-sched/drover/structs"
)

// TaskConfig is the docker driver's task config: the options of Nomad's
// docker driver that drover supports, with their meaning. The task's env
// block is the container's environment; its resources are the container's
// limits.
type TaskConfig struct {
	// Image is the image to run; pulled when absent (or always, with
	// ForcePull), with Auth when set.
	Image     string `config:"image,required"`
	ForcePull bool   `config:"force_pull"`
	// ImagePullTimeout bounds a pull (default 5m, Nomad's).
	ImagePullTimeout time.Duration `config:"image_pull_timeout"`
	Auth             Auth          `config:"auth"`
	// AuthSoftFail: a pull that fails with the given auth is retried
	// without it.
	AuthSoftFail bool `config:"auth_soft_fail"`
	// Command replaces the image's command; Args follow it (or the
	// image's entrypoint).
	Command    string   `config:"command"`
	Args       []string `config:"args"`
	Entrypoint []string `config:"entrypoint"`
	// WorkDir is the working directory inside the container.
	WorkDir string `config:"work_dir"`
	// Labels are added to the container's (drover's own are
	// drover.alloc_id, drover.job_id, drover.task_name, ...).
	Labels map[string]string `config:"labels"`
	// Volumes are "host:container[:ro|rw]" binds; a relative host path
	// is inside the task dir (absolute ones need the agent's
	// -docker-volumes-enabled, as Nomad's volumes.enabled).
	Volumes []string `config:"volumes"`
	// Mounts are Docker mounts (bind, volume, tmpfs).
	Mounts []Mount `config:"mount"`
	// NetworkMode is Docker's network mode ("bridge" by default, "host",
	// "none", "container:<name>", or a network's name).
	NetworkMode string `config:"network_mode"`
	// Ports are group network port labels to publish: each one's host
	// port is bound to its `to` (or the same number) inside the container.
	Ports []string `config:"ports"`
	// Privileged runs the container privileged; only where the agent
	// allows it (-docker-allow-privileged, Nomad's allow_privileged).
	Privileged bool `config:"privileged"`
	// Hostname, DNS and hosts settings of the container.
	Hostname         string   `config:"hostname"`
	DNSServers       []string `config:"dns_servers"`
	DNSSearchDomains []string `config:"dns_search_domains"`
	DNSOptions       []string `config:"dns_options"`
	ExtraHosts       []string `config:"extra_hosts"`
	// CapAdd and CapDrop change the container's capabilities.
	CapAdd  []string `config:"cap_add"`
	CapDrop []string `config:"cap_drop"`
	// SecurityOpt, Sysctl, Ulimit: Docker's security options, sysctls
	// and ulimits ("soft:hard" or one number).
	SecurityOpt []string          `config:"security_opt"`
	Sysctl      map[string]string `config:"sysctl"`
	Ulimit      map[string]string `config:"ulimit"`
	// Init runs Docker's init as the container's PID 1.
	Init bool `config:"init"`
	// TTY and Interactive allocate a terminal and keep stdin open.
	TTY         bool `config:"tty"`
	Interactive bool `config:"interactive"`
	// IPCMode, PIDMode and UTSMode are Docker's ("host", ...).
	IPCMode string `config:"ipc_mode"`
	PIDMode string `config:"pid_mode"`
	UTSMode string `config:"uts_mode"`
	// ShmSize is /dev/shm's size in bytes.
	ShmSize int64 `config:"shm_size"`
	// ReadonlyRootfs mounts the image read-only.
	ReadonlyRootfs bool `config:"readonly_rootfs"`
	// MemoryHardLimit is Nomad's older way to set a hard limit above the
	// task's memory, in MiB (memory_max is the newer).
	MemoryHardLimit int `config:"memory_hard_limit"`
	// Logging is the container's log driver: json-file (the default) or
	// local, the ones drover can read the task's logs from.
	Logging Logging `config:"logging"`
}

// Auth is a registry login, used when pulling the image.
type Auth struct {
	Username      string `config:"username"`
	Password      string `config:"password"`
	ServerAddress string `config:"server_address"`
}

// Mount is one Docker mount (Nomad's mount block).
type Mount struct {
	// Type is bind, volume (the default) or tmpfs.
	Type     string `config:"type"`
	Source   string `config:"source"`
	Target   string `config:"target,required"`
	Readonly bool   `config:"readonly"`
	// BindOptions, VolumeOptions, TmpfsOptions are per type.
	BindOptions   BindOptions   `config:"bind_options"`
	VolumeOptions VolumeOptions `config:"volume_options"`
	TmpfsOptions  TmpfsOptions  `config:"tmpfs_options"`
}

// BindOptions of a bind mount.
type BindOptions struct {
	Propagation string `config:"propagation"`
}

// VolumeOptions of a volume mount.
type VolumeOptions struct {
	NoCopy       bool              `config:"no_copy"`
	Labels       map[string]string `config:"labels"`
	DriverConfig VolumeDriver      `config:"driver_config"`
}

// VolumeDriver names a volume's driver and its options.
type VolumeDriver struct {
	Name    string            `config:"name"`
	Options map[string]string `config:"options"`
}

// TmpfsOptions of a tmpfs mount.
type TmpfsOptions struct {
	Size int64 `config:"size"`
	Mode int64 `config:"mode"`
}

// Logging is the container's log driver.
type Logging struct {
	Type   string            `config:"type"`
	Config map[string]string `config:"config"`
}

// Spec declares the docker driver's task config, for submission checks
// and the node alike.
var Spec = drivers.Spec[TaskConfig]{Driver: Name}

// DefaultImagePullTimeout is Nomad's.
const DefaultImagePullTimeout = 5 * time.Minute

// Rules checks what the types cannot.
func (c *TaskConfig) Rules(vc drivers.ValidateContext) drivers.FieldErrors {
	var errs drivers.FieldErrors
	add := func(field, format string, a ...any) {
		errs = append(errs, &drivers.FieldError{Field: field, Rule: fmt.Sprintf(format, a...)})
	}
	if strings.TrimSpace(c.Image) == "" {
		add("image", "must not be empty")
	} else if strings.ContainsAny(c.Image, " \t\n") {
		add("image", "must be an image reference without spaces (got %q)", c.Image)
	}
	if c.ImagePullTimeout < 0 {
		add("image_pull_timeout", "must not be negative (got %v)", c.ImagePullTimeout)
	}
	for i, p := range c.Ports {
		if !slices.Contains(vc.GroupPorts, p) {
			add(fmt.Sprintf("ports[%d]", i), "port label %q must be one of the group network's ports (%s)", p, portList(vc.GroupPorts))
		}
	}
	if vc.GroupNetworkMode == structs.NetworkModeBridge {
		if err := bridgeConflicts(c); err != nil {
			field, rule, _ := strings.Cut(err.Error(), ": ")
			add(field, "%s", rule)
		}
	}
	for i, v := range c.Volumes {
		parts := strings.Split(v, ":")
		switch {
		case len(parts) < 2 || len(parts) > 3 || parts[0] == "" || parts[1] == "":
			add(fmt.Sprintf("volumes[%d]", i), `must be "host_path:container_path" with an optional ":ro" or ":rw" (got %q)`, v)
		case !path.IsAbs(parts[1]):
			add(fmt.Sprintf("volumes[%d]", i), "container path %q must be absolute", parts[1])
		case len(parts) == 3 && parts[2] != "ro" && parts[2] != "rw":
			add(fmt.Sprintf("volumes[%d]", i), `mode %q must be "ro" or "rw"`, parts[2])
		}
	}
	for i, m := range c.Mounts {
		mp := fmt.Sprintf("mount[%d]", i)
		switch m.Type {
		case "", "volume", "bind", "tmpfs":
		default:
			add(mp+".type", `must be "bind", "volume" or "tmpfs" (got %q)`, m.Type)
		}
		if !path.IsAbs(m.Target) {
			add(mp+".target", "must be an absolute path in the container (got %q)", m.Target)
		}
		if m.Type == "bind" && m.Source == "" {
			add(mp+".source", "is required for a bind mount")
		}
		if m.Type == "tmpfs" && m.Source != "" {
			add(mp+".source", "must be empty for a tmpfs mount")
		}
		switch m.BindOptions.Propagation {
		case "", "private", "rprivate", "shared", "rshared", "slave", "rslave":
		default:
			add(mp+".bind_options.propagation", "unknown propagation %q", m.BindOptions.Propagation)
		}
	}
	for i, s := range c.DNSServers {
		if _, err := netip.ParseAddr(s); err != nil {
			add(fmt.Sprintf("dns_servers[%d]", i), "must be an IP address (got %q)", s)
		}
	}
	for k, v := range c.Ulimit {
		if _, _, err := parseUlimit(v); err != nil {
			add("ulimit."+k, "%v", err)
		}
	}
	if c.ShmSize < 0 {
		add("shm_size", "must not be negative (got %d)", c.ShmSize)
	}
	if c.MemoryHardLimit < 0 {
		add("memory_hard_limit", "must not be negative (got %d)", c.MemoryHardLimit)
	}
	switch c.Logging.Type {
	case "", "json-file", "local":
	default:
		add("logging.type", `must be "json-file" or "local", the log drivers drover reads task logs from (got %q)`, c.Logging.Type)
	}
	return errs
}

// parseUlimit reads "soft:hard" or one number for both.
func parseUlimit(v string) (soft, hard int64, err error) {
	s, h, two := strings.Cut(v, ":")
	bad := fmt.Errorf(`must be "soft:hard" or a number (got %q)`, v)
	if soft, err = strconv.ParseInt(s, 10, 64); err != nil {
		return 0, 0, bad
	}
	hard = soft
	if two {
		if hard, err = strconv.ParseInt(h, 10, 64); err != nil {
			return 0, 0, bad
		}
	}
	if hard < soft {
		return 0, 0, fmt.Errorf("hard limit below the soft one (got %q)", v)
	}
	return soft, hard, nil
}

// portList names a group's port labels for messages.
func portList(labels []string) string {
	if len(labels) == 0 {
		return "the group has no network block"
	}
	return "the group has " + strings.Join(labels, ", ")
}
