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

// ScalingPolicyID is the stable ID of a group's horizontal scaling policy:
// derived from its target, so that it stays the same across versions of
// the job (Nomad keeps a policy's ID while its target is unchanged).
func ScalingPolicyID(namespace, jobID, group, typ string) string {
	return DeterministicID("scaling-policy", namespace, jobID, group, typ)
}

// ScalingPolicies returns the job's group scaling policies as the API
// serves them: ID, namespace and target filled in, CreateIndex the job's
// and ModifyIndex its JobModifyIndex; a stopped job's are disabled, as in
// Nomad. Groups without a scaling block have none.
func (j *Job) ScalingPolicies() []*ScalingPolicy {
	var out []*ScalingPolicy
	for _, tg := range j.TaskGroups {
		if tg.Scaling == nil {
			continue
		}
		p := *tg.Scaling
		if p.Type == "" {
			p.Type = ScalingPolicyTypeHorizontal
		}
		p.ID = ScalingPolicyID(j.Namespace, j.ID, tg.Name, p.Type)
		p.Namespace = j.Namespace
		p.Target = map[string]string{ScalingTargetNamespace: j.Namespace, ScalingTargetJob: j.ID, ScalingTargetGroup: tg.Name}
		p.Enabled = p.Enabled && !j.Stop
		p.CreateIndex, p.ModifyIndex = j.CreateIndex, j.JobModifyIndex
		out = append(out, &p)
	}
	return out
}
