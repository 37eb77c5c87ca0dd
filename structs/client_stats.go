package structs

import "time"

// Resource usage of allocations and hosts, in Nomad's shapes (its
// AllocResourceUsage and HostStats), as the client routes
// /v1/client/allocation/:id/stats and /v1/client/stats answer them.
// Memory is in bytes, CPU percentages are of one core (100 = one core
// busy), ticks are MHz, timestamps are Unix nanoseconds.

// AllocResourceUsage is an allocation's resource use: the sum over its
// tasks and each task's own.
type AllocResourceUsage struct {
	ResourceUsage *ResourceUsage
	Tasks         map[string]*TaskResourceUsage
	Timestamp     int64
}

// TaskResourceUsage is one task's resource use. drover reports the task's
// processes together, so Pids is empty.
type TaskResourceUsage struct {
	ResourceUsage *ResourceUsage
	Timestamp     int64
	Pids          map[string]*ResourceUsage
}

// ResourceUsage is memory and CPU use.
type ResourceUsage struct {
	MemoryStats *MemoryStats
	CpuStats    *CpuStats
	DeviceStats []any
}

// MemoryStats is memory use in bytes; Measured names the fields that hold
// measurements (Nomad's "RSS", "Max Usage", ...).
type MemoryStats struct {
	RSS            uint64
	Cache          uint64
	Swap           uint64
	Usage          uint64
	MaxUsage       uint64
	KernelUsage    uint64
	KernelMaxUsage uint64
	Measured       []string
}

// CpuStats is CPU use: Percent of one core over the last sampling period,
// TotalTicks the same in MHz (Percent/100 × the MHz of one core);
// SystemMode and UserMode percentages when measured apart.
type CpuStats struct {
	SystemMode       float64
	UserMode         float64
	TotalTicks       float64
	ThrottledPeriods uint64
	ThrottledTime    uint64
	Percent          float64
	Measured         []string
}

// HostStats is a node's resource use, from /proc and statfs.
type HostStats struct {
	Memory        *HostMemoryStats
	CPU           []*HostCPUStats
	DiskStats     []*HostDiskStats
	AllocDirStats *HostDiskStats
	DeviceStats   []any
	// Uptime is in seconds.
	Uptime uint64
	// CPUTicksConsumed is the MHz busy over all cores.
	CPUTicksConsumed float64
	// Timestamp is when the sample was taken, Unix nanoseconds.
	Timestamp int64
}

// HostMemoryStats is the host's memory in bytes.
type HostMemoryStats struct {
	Total     uint64
	Available uint64
	Used      uint64
	Free      uint64
}

// HostCPUStats is one core's time split, in percent since the previous
// sample (since boot for the first one).
type HostCPUStats struct {
	CPU    string
	User   float64
	System float64
	Idle   float64
}

// HostDiskStats is one mounted filesystem's use, sizes in bytes.
type HostDiskStats struct {
	Device            string
	Mountpoint        string
	Size              uint64
	Used              uint64
	Available         uint64
	UsedPercent       float64
	InodesUsedPercent float64
}

// AllocFileInfo describes a file in an allocation's directory (Nomad's,
// answered by /v1/client/fs/ls and /stat). FileMode is Go's
// os.FileMode string ("-rw-r--r--").
type AllocFileInfo struct {
	Name        string
	IsDir       bool
	Size        int64
	FileMode    string
	ModTime     time.Time
	ContentType string `json:",omitempty"`
}
