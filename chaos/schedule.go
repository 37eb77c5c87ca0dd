// Package chaos is drover's own fault-schedule suite (issue 15): a seeded
// generator of schedules (operations on service and batch jobs on a few
// tight nodes, node reports, node losses, clock steps, interleaved with
// faults), a runner that plays a schedule against a home through the same
// code the server and the Lambda functions run (controlplane.Service for
// the API's writes and the nodes' reports, scheduler.Evaluator for the
// evaluations, the home's own queue delivery adapter), simulated node
// agents that report their allocations, and a checker of the design
// brief's invariants once the cluster is quiet.
//
// A home (the embedded bbolt store, or DynamoDB on an emulator) plugs in
// through Home; its faults are its own (crash points in the embedded
// store's commit path and process restarts; SDK middleware faults on the
// AWS home). A failing schedule prints its seed and the command that
// replays it.
package chaos

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// Params shape the schedules Generate makes.
type Params struct {
	// Nodes, Jobs and Steps are upper bounds; each schedule draws its own
	// (at least 2 nodes, 2 jobs, Steps/2 steps).
	Nodes, Jobs, Steps int
	// FaultRate is the chance that a step is a fault (0..1).
	FaultRate float64
	// Sequential plays deliveries one at a time (moto does not isolate
	// concurrent transactions, so concurrent plans there prove nothing).
	Sequential bool
	// Features widen the schedules beyond the first generator's
	// operations (0: exactly the schedules that generator made, which
	// keeps the seeds of earlier findings replayable). Their draws come
	// from a second random stream, so a seed's first-generator steps are
	// the same whatever features are on: a feature decorates
	// registrations and replaces some of the other steps.
	Features Features
	// FeatureRate is the chance that a step other than a registration or
	// a fault is replaced by a feature's step.
	FeatureRate float64
}

// Features are the kinds of work a schedule may hold besides the first
// generator's.
type Features uint

// The features.
const (
	// FeatCanaries: service jobs may roll out with canaries
	// (auto-promoted or not) and auto-revert; steps promote and fail
	// deployments as an operator does through the API.
	FeatCanaries Features = 1 << iota
	// FeatDrains: steps drain nodes (with a deadline, or forced) and
	// toggle their eligibility, as an operator does through the API.
	FeatDrains
	// FeatSystem: a quarter of the jobs first registered as services are
	// system jobs, a quarter of the batch ones sysbatch jobs.
	FeatSystem
	// AllFeatures is every feature.
	AllFeatures = FeatCanaries | FeatDrains | FeatSystem
)

var featureNames = map[Features]string{FeatCanaries: "canaries", FeatDrains: "drains", FeatSystem: "system"}

// ParseFeatures reads a comma-separated list of feature names, "all" or
// "none".
func ParseFeatures(s string) (Features, error) {
	var f Features
	for _, name := range strings.Split(s, ",") {
		switch name = strings.TrimSpace(name); name {
		case "", "none":
			continue
		case "all":
			f |= AllFeatures
			continue
		}
		found := false
		for k, n := range featureNames {
			if n == name {
				f |= k
				found = true
			}
		}
		if !found {
			return 0, fmt.Errorf("chaos: unknown feature %q", name)
		}
	}
	return f, nil
}

// DefaultParams are small schedules: a few nodes whose capacity the jobs
// can exceed, so that a wrong capacity check would over-commit.
var DefaultParams = Params{Nodes: 3, Jobs: 5, Steps: 40, FaultRate: 0.15, Features: AllFeatures, FeatureRate: 0.12}

// Node capacity in every schedule: jobs ask 100–400 MHz and 64–256 MiB
// per alloc, so a few allocs fill a node.
const (
	NodeCPU    = 1000
	NodeMemory = 1024
	NodeDisk   = 10000
)

// StepKind is what a step does.
type StepKind int

// The step kinds.
const (
	// StepRegister registers (or updates) job Job with Count allocs of
	// CPU/Memory each; Variant changes the task's environment, so a
	// registration of an existing job with another variant is a
	// destructive update.
	StepRegister StepKind = iota
	// StepScale sets job Job's group count to Count.
	StepScale
	// StepStop stops job Job.
	StepStop
	// StepPurge stops and purges job Job.
	StepPurge
	// StepDeliver delivers up to N ready evaluations, of different jobs
	// at once (concurrently when N > 1).
	StepDeliver
	// StepReport makes node Node report: pending allocs start, stopped
	// ones end, and some running ones fail (services and batch) or
	// finish (batch), as the generator's Rand decides.
	StepReport
	// StepAdvance moves the clock by Advance.
	StepAdvance
	// StepNodeDown makes node Node miss its heartbeats (its allocs are
	// lost); StepNodeUp brings it back.
	StepNodeDown
	StepNodeUp
	// StepFault arms the home's fault Fault (one of Home.Faults).
	StepFault
	// StepRedeliver delivers again an evaluation already delivered (at
	// least once, everywhere): the queue's redelivery, or a delayed
	// eval's timer firing twice or early.
	StepRedeliver
	// StepPromote promotes job Job's latest deployment (its canaries), as
	// `nomad deployment promote` does through the API.
	StepPromote
	// StepFailDeployment fails job Job's latest deployment, as `nomad
	// deployment fail` does (rolling back with auto_revert).
	StepFailDeployment
	// StepDrain drains node Node with deadline Deadline (< 0: forced),
	// as `nomad node drain -enable` does.
	StepDrain
	// StepEligibility makes node Node eligible (cancelling its drain, as
	// `nomad node drain -disable` does) or ineligible (Eligible false).
	StepEligibility
)

var stepNames = map[StepKind]string{StepRegister: "register", StepScale: "scale", StepStop: "stop", StepPurge: "purge",
	StepDeliver: "deliver", StepReport: "report", StepAdvance: "advance", StepNodeDown: "node-down", StepNodeUp: "node-up",
	StepFault: "fault", StepRedeliver: "redeliver", StepPromote: "promote", StepFailDeployment: "fail-deployment",
	StepDrain: "drain", StepEligibility: "eligibility"}

func (k StepKind) String() string { return stepNames[k] }

// Step is one step of a schedule.
type Step struct {
	Kind StepKind
	// Job indexes Schedule.Jobs; Node indexes the nodes.
	Job, Node int
	// Count, CPU (MHz), Memory (MiB) and Variant of a registration;
	// Count of a scale.
	Count, CPU, Memory, Variant int
	// Batch: the registration is of a batch job (a job keeps the type of
	// its first registration until purged); System: of a system job
	// (with Batch: sysbatch), which runs one alloc per node (FeatSystem).
	Batch, System bool
	// N is how many evaluations a delivery takes at most.
	N int
	// Advance is a clock step.
	Advance time.Duration
	// Fault names the home's fault; Seed drives its details.
	Fault string
	Seed  uint64
	// Early: a redelivery may be of a delayed eval before its time.
	Early bool
	// Canary, AutoPromote and AutoRevert are a service registration's
	// update block (FeatCanaries).
	Canary                  int
	AutoPromote, AutoRevert bool
	// Deadline and IgnoreSystem are a drain's; Eligible an eligibility
	// step's (FeatDrains).
	Deadline     time.Duration
	IgnoreSystem bool
	Eligible     bool
}

func (s Step) String() string {
	switch s.Kind {
	case StepRegister:
		kind := "service"
		switch {
		case s.Batch && s.System:
			kind = "sysbatch"
		case s.System:
			kind = "system"
		case s.Batch:
			kind = "batch"
		}
		out := fmt.Sprintf("register %s job%d count=%d cpu=%d mem=%d variant=%d", kind, s.Job, s.Count, s.CPU, s.Memory, s.Variant)
		if s.Canary > 0 {
			out += fmt.Sprintf(" canary=%d auto_promote=%t", s.Canary, s.AutoPromote)
		}
		if s.AutoRevert {
			out += " auto_revert"
		}
		return out
	case StepScale:
		return fmt.Sprintf("scale job%d count=%d", s.Job, s.Count)
	case StepStop, StepPurge, StepPromote, StepFailDeployment:
		return fmt.Sprintf("%s job%d", s.Kind, s.Job)
	case StepDeliver:
		return fmt.Sprintf("deliver %d", s.N)
	case StepReport, StepNodeDown, StepNodeUp:
		return fmt.Sprintf("%s node%d", s.Kind, s.Node)
	case StepAdvance:
		return fmt.Sprintf("advance %s", s.Advance)
	case StepDrain:
		return fmt.Sprintf("drain node%d deadline=%s ignore_system=%t", s.Node, s.Deadline, s.IgnoreSystem)
	case StepEligibility:
		return fmt.Sprintf("eligibility node%d eligible=%t", s.Node, s.Eligible)
	case StepFault:
		return fmt.Sprintf("fault %s", s.Fault)
	case StepRedeliver:
		return fmt.Sprintf("redeliver early=%t", s.Early)
	}
	return s.Kind.String()
}

// Schedule is one generated run.
type Schedule struct {
	Seed  uint64
	Nodes int
	Jobs  int
	Steps []Step
	// PromoteAtRest: once the cluster is quiet, an operator promotes
	// every deployment whose canaries are all healthy (FeatCanaries; the
	// rollout then goes on before the check).
	PromoteAtRest bool
}

// Generate makes the schedule of seed: the same seed and params give the
// same schedule. faults are the home's fault kinds (none: a fault-free
// schedule).
func Generate(seed uint64, p Params, faults []string) *Schedule {
	r := rand.New(rand.NewPCG(seed, 0x15c4a05))
	// The features' stream: r's draws stay those of the first generator.
	fr := rand.New(rand.NewPCG(seed, 0x15c4a06))
	s := &Schedule{Seed: seed, Nodes: 2 + r.IntN(max(p.Nodes-1, 1)), Jobs: 2 + r.IntN(max(p.Jobs-1, 1))}
	s.PromoteAtRest = p.Features&FeatCanaries != 0 && fr.IntN(2) == 0
	n := max(p.Steps/2, 1) + r.IntN(max(p.Steps/2, 1)+1)
	registered := make([]bool, s.Jobs)
	batch := make([]bool, s.Jobs)
	system := make([]bool, s.Jobs)
	for range n {
		if len(faults) > 0 && r.Float64() < p.FaultRate {
			s.Steps = append(s.Steps, Step{Kind: StepFault, Fault: faults[r.IntN(len(faults))], Seed: r.Uint64()})
			continue
		}
		j := r.IntN(s.Jobs)
		st := Step{Job: j, Node: r.IntN(s.Nodes), Seed: r.Uint64()}
		first := !registered[j]
		switch x := r.IntN(100); {
		case x < 18 || !registered[j]:
			if !registered[j] {
				batch[j] = r.IntN(3) == 0
			}
			st.Kind, st.Batch = StepRegister, batch[j]
			st.Count = 1 + r.IntN(4)
			st.CPU = 100 * (1 + r.IntN(4))
			st.Memory = 64 << r.IntN(3)
			st.Variant = r.IntN(3)
			registered[j] = true
		case x < 26:
			st.Kind, st.Count = StepScale, r.IntN(6)
		case x < 30:
			st.Kind = StepStop
		case x < 33:
			st.Kind = StepPurge
			registered[j] = false
		case x < 55:
			st.Kind, st.N = StepDeliver, 1+r.IntN(3)
		case x < 80:
			st.Kind = StepReport
		case x < 88:
			st.Kind, st.Advance = StepAdvance, time.Duration(1+r.IntN(60))*time.Second
		case x < 91:
			st.Kind = StepNodeDown
		case x < 94:
			st.Kind = StepNodeUp
		default:
			st.Kind, st.Early = StepRedeliver, r.IntN(2) == 0
		}
		if p.Features != 0 {
			if st.Kind == StepRegister {
				if first {
					system[j] = p.Features&FeatSystem != 0 && fr.IntN(4) == 0
				}
				st.System = system[j]
				decorate(fr, p.Features, &st)
			} else if fr.Float64() < p.FeatureRate {
				st = featureStep(fr, p.Features, st)
			}
		}
		s.Steps = append(s.Steps, st)
	}
	return s
}

// decorate draws a registration's feature settings.
func decorate(r *rand.Rand, f Features, st *Step) {
	if f&FeatCanaries != 0 && !st.Batch && !st.System {
		if r.IntN(3) == 0 {
			st.Canary, st.AutoPromote = 1+r.IntN(2), r.IntN(2) == 0
		}
		st.AutoRevert = r.IntN(3) == 0
	}
}

// featureStep is the feature step replacing st (on st's job and node).
func featureStep(r *rand.Rand, f Features, st Step) Step {
	var kinds []StepKind
	if f&FeatCanaries != 0 {
		kinds = append(kinds, StepPromote, StepPromote, StepFailDeployment)
	}
	if f&FeatDrains != 0 {
		kinds = append(kinds, StepDrain, StepDrain, StepEligibility, StepEligibility)
	}
	if len(kinds) == 0 {
		return st
	}
	out := Step{Kind: kinds[r.IntN(len(kinds))], Job: st.Job, Node: st.Node, Seed: st.Seed}
	switch out.Kind {
	case StepDrain:
		out.Deadline = []time.Duration{-1, 30 * time.Second, 2 * time.Minute, time.Hour}[r.IntN(4)]
		out.IgnoreSystem = r.IntN(3) == 0
	case StepEligibility:
		out.Eligible = r.IntN(3) != 0
	}
	return out
}
