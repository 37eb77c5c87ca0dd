package structs

// Scheduler algorithms, Nomad's names: binpack fills the fullest nodes
// that fit first; spread prefers the emptiest.
const (
	SchedulerAlgorithmBinpack = "binpack"
	SchedulerAlgorithmSpread  = "spread"
)

// SchedulerConfiguration is the cluster's scheduler settings, Nomad's
// SchedulerConfiguration shape. drover honours SchedulerAlgorithm (node
// scoring) and PauseEvalBroker (no evaluation is processed while set);
// the other fields are stored and returned as given.
type SchedulerConfiguration struct {
	// SchedulerAlgorithm is binpack (default) or spread.
	SchedulerAlgorithm string
	// PreemptionConfig is stored; drover does not preempt.
	PreemptionConfig PreemptionConfig
	// MemoryOversubscriptionEnabled is stored; raw_exec does not limit
	// memory.
	MemoryOversubscriptionEnabled bool
	// RejectJobRegistration is stored (Nomad's is an emergency brake).
	RejectJobRegistration bool
	// PauseEvalBroker stops evaluation processing while true.
	PauseEvalBroker bool
	// NodeLimitForFeasibilityChecks is stored; drover widens the sample
	// of groups with affinities or spreads as Nomad's stack does
	// (max(count, 100) nodes) rather than by this setting.
	NodeLimitForFeasibilityChecks uint
	CreateIndex                   uint64
	ModifyIndex                   uint64
}

// PreemptionConfig is Nomad's per-scheduler preemption switches.
type PreemptionConfig struct {
	SystemSchedulerEnabled   bool
	SysBatchSchedulerEnabled bool
	BatchSchedulerEnabled    bool
	ServiceSchedulerEnabled  bool
}

// DefaultSchedulerConfiguration is the configuration of a cluster that
// never set one (Nomad's defaults: binpack, system preemption on).
func DefaultSchedulerConfiguration() *SchedulerConfiguration {
	return &SchedulerConfiguration{SchedulerAlgorithm: SchedulerAlgorithmBinpack,
		PreemptionConfig: PreemptionConfig{SystemSchedulerEnabled: true}}
}
