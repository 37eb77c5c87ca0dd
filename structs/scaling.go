package structs

// Scaling policy types and target keys, as Nomad's.
const (
	ScalingPolicyTypeHorizontal = "horizontal"
	ScalingTargetNamespace      = "Namespace"
	ScalingTargetJob            = "Job"
	ScalingTargetGroup          = "Group"
)

// ScalingPolicy is a group's scaling block: the bounds of its count and
// an autoscaler policy drover keeps but does not interpret. Shape and JSON
// names are Nomad's structs.ScalingPolicy. Min and Max bound the count a
// `job scale` may set; ID, Namespace, Target and the indexes are filled in
// by the server from the job that holds the policy.
type ScalingPolicy struct {
	ID        string
	Type      string
	Namespace string            `json:",omitempty"`
	Target    map[string]string `json:",omitempty"`
	Min       int64
	Max       int64
	// Policy is the autoscaler's configuration, stored opaquely.
	Policy      map[string]any `json:",omitempty"`
	Enabled     bool
	CreateIndex uint64
	ModifyIndex uint64
}

// ScalingPolicyListStub is the summary GET /v1/scaling/policies returns,
// as Nomad's.
type ScalingPolicyListStub struct {
	ID          string
	Enabled     bool
	Type        string
	Target      map[string]string
	CreateIndex uint64
	ModifyIndex uint64
}

// Stub returns the policy's list summary.
func (p *ScalingPolicy) Stub() *ScalingPolicyListStub {
	return &ScalingPolicyListStub{ID: p.ID, Enabled: p.Enabled, Type: p.Type, Target: p.Target,
		CreateIndex: p.CreateIndex, ModifyIndex: p.ModifyIndex}
}
