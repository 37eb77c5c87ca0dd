package chaos

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// The suite's flags. This package is imported by tests only; both homes'
// test binaries share these.
var (
	flagSeed     = flag.Int64("seed", -1, "chaos: replay this one seed, up to -repeat times until it fails (a failing play logs its steps and the state at rest)")
	flagSeeds    = flag.Int("seeds", 0, "chaos: how many seeds to run, with the summary table (omitted: the home's fixed CI seeds)")
	flagFirst    = flag.Uint64("first-seed", 1, "chaos: the first seed of a -seeds run")
	flagSteps    = flag.Int("steps", 0, "chaos: the schedules' size: each has Steps/2 to Steps steps (0: the home's default)")
	flagFeatures = flag.String("features", "", "chaos: the schedules' features: all, none (the first generator's schedules, as earlier findings name their seeds), or a comma-separated list of "+
		featureList()+"; empty: all (chaos/proc: none, the only one it plays)")
	flagRepeat = flag.Int("repeat", 20, "chaos: with -seed, play it up to this many times until it fails (concurrent deliveries make a replay's interleaving vary)")
)

// featureList names the features -features takes, sorted.
func featureList() string {
	names := make([]string, 0, len(featureNames))
	for _, n := range featureNames {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// flagsGiven are the names of the flags given on the command line.
func flagsGiven() map[string]bool {
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// CheckFlags returns an error naming the suite's flag whose value cannot
// be played (a negative seed, -seeds below 1, both -seed and -seeds, a
// -repeat below 1, negative -steps, an unknown feature), so that a
// mistyped run fails instead of quietly playing something else.
func CheckFlags() error {
	set := flagsGiven()
	switch {
	case set["seed"] && *flagSeed < 0:
		return fmt.Errorf("chaos: -seed %d: a seed is a number ≥ 0", *flagSeed)
	case set["seeds"] && *flagSeeds < 1:
		return fmt.Errorf("chaos: -seeds %d: at least 1 (a plain go test without -seeds plays the home's fixed CI seeds)", *flagSeeds)
	case set["seed"] && set["seeds"]:
		return fmt.Errorf("chaos: -seed replays one seed and -seeds runs many: give one of them")
	case *flagRepeat < 1:
		return fmt.Errorf("chaos: -repeat %d: at least 1", *flagRepeat)
	case *flagSteps < 0:
		return fmt.Errorf("chaos: -steps %d: at least 1 (0: the home's default)", *flagSteps)
	}
	if _, err := ParseFeatures(*flagFeatures); err != nil {
		return fmt.Errorf("%w (-features takes all, none or a list of %s)", err, featureList())
	}
	return nil
}

// ReplayFlags are the schedule-shaping flags given on the command line
// (" -features none -steps 10"), for a replay command to play the same
// schedule; empty when none was given.
func ReplayFlags() string {
	set := flagsGiven()
	var b strings.Builder
	if set["features"] {
		fmt.Fprintf(&b, " -features '%s'", *flagFeatures)
	}
	if set["steps"] {
		fmt.Fprintf(&b, " -steps %d", *flagSteps)
	}
	return b.String()
}

// ApplyFlags returns p shaped by -steps and -features (p itself when
// neither was given); an unknown feature is an error.
func ApplyFlags(p Params) (Params, error) {
	if *flagSteps > 0 {
		p.Steps = *flagSteps
	}
	if *flagFeatures != "" {
		f, err := ParseFeatures(*flagFeatures)
		if err != nil {
			return p, err
		}
		p.Features = f
		if p.FeatureRate == 0 {
			p.FeatureRate = DefaultParams.FeatureRate
		}
	}
	return p, nil
}

// Suite runs seeds of one home and summarizes them.
type Suite struct {
	// Name is the home's name in the summary ("embedded", "aws/kumo").
	Name string
	// Params shape the schedules (zero: DefaultParams).
	Params Params
	// CISeeds is how many seeds a plain `go test` runs.
	CISeeds int
	// NewHome opens a fresh home for one schedule on env.
	NewHome func(t testing.TB, env *Env) Home
	// Replay is the command that replays a seed (%d: the seed).
	Replay string
	// Faults, when set, are the only fault kinds generated (default: the
	// home's and FaultStaleRead).
	Faults []string
	// Open are invariants whose violations are open findings, not yet
	// told apart between a drover bug and a gap of the harness's model
	// (the reason says which): they are counted and logged with their
	// seeds, and do not fail the run.
	Open map[string]string
}

// Summary counts what a suite run did.
type Summary struct {
	Home       string
	Schedules  int
	Steps      int
	Operations int
	OpErrors   int
	Deliveries int
	Reports    int
	Restarts   int
	Allocs     int
	Evals      int
	Faults     map[string]int
	Work       map[string]int
	Violations map[string]int
	// Unchecked are invariants of Invariants a home does not check (its
	// table shows "not checked" for them rather than a 0 that reads as
	// passed).
	Unchecked []string
	// Extra are a home's invariants beyond Invariants (rows of the
	// table, zero or not).
	Extra []string
	// Failed are the seeds whose schedule broke an invariant.
	Failed  []uint64
	Elapsed time.Duration
}

// ExitOnBadFlags is for a leg's TestMain that starts something costly
// before its tests run (emulators, a build of drover): it parses the
// command line and, when CheckFlags refuses it, prints why and exits with
// status 2 before anything starts.
func ExitOnBadFlags() {
	flag.Parse()
	if err := CheckFlags(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}

// Seeds returns the seeds a run takes: the -seed flag's one (-repeat
// times), or -seeds from -first-seed, or ci from 1. Flags that cannot be
// played (CheckFlags) fail t.
func Seeds(t testing.TB, ci int) []uint64 {
	t.Helper()
	if err := CheckFlags(); err != nil {
		t.Fatal(err)
	}
	if *flagSeed >= 0 {
		out := make([]uint64, *flagRepeat)
		for i := range out {
			out[i] = uint64(*flagSeed)
		}
		return out
	}
	n := ci
	if *flagSeeds > 0 {
		n = *flagSeeds
	}
	out := make([]uint64, n)
	for i := range out {
		out[i] = *flagFirst + uint64(i)
	}
	return out
}

// Replaying reports whether -seed asked for one seed to be replayed
// (with its steps logged, until it fails).
func Replaying() bool { return *flagSeed >= 0 }

// Run plays the seeds and fails t, naming each failing seed and its
// replay command, when a schedule breaks an invariant. It returns the
// summary (also printed when more seeds than the CI ones were asked).
func (s Suite) Run(t *testing.T) *Summary {
	sum := s.RunSeeds(t, Seeds(t, s.CISeeds), func(seed uint64, v []Violation, steps []Step) {
		var open []Violation
		var broken []Violation
		for _, x := range v {
			if _, ok := s.Open[x.Invariant]; ok {
				open = append(open, x)
			} else {
				broken = append(broken, x)
			}
		}
		for _, x := range open {
			t.Logf("%s: seed %d: open finding (%s): %s; replay: %s", s.Name, seed, s.Open[x.Invariant], x, s.replay(seed))
		}
		v = broken
		if len(v) == 0 {
			return
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%s: seed %d broke %d invariant(s); replay: %s\n", s.Name, seed, len(v), s.replay(seed))
		for i, x := range v {
			if i == 10 {
				fmt.Fprintf(&b, "  ... and %d more\n", len(v)-10)
				break
			}
			fmt.Fprintf(&b, "  %s\n", x)
		}
		t.Error(b.String())
	})
	if *flagSeeds > 0 || *flagSeed >= 0 {
		sum.Print(os.Stdout)
	}
	return sum
}

// RunSeeds plays the seeds and calls failed for each schedule that broke
// an invariant; an error of the harness itself fails t.
func (s Suite) RunSeeds(t *testing.T, seeds []uint64, failed func(seed uint64, v []Violation, steps []Step)) *Summary {
	p := s.Params
	if p.Steps == 0 {
		p = DefaultParams
	}
	p, err := ApplyFlags(p)
	if err != nil {
		t.Fatal(err)
	}
	sum := &Summary{Home: s.Name, Faults: map[string]int{}, Work: map[string]int{}, Violations: map[string]int{}}
	start := time.Now()
	for _, seed := range seeds {
		env := NewEnv()
		home := s.NewHome(t, env)
		faults := append(home.Faults(), FaultStaleRead)
		if s.Faults != nil {
			faults = s.Faults
		}
		sched := Generate(seed, p, faults)
		r := &Runner{Home: home, Env: env, Params: p}
		var log strings.Builder
		if *flagSeed >= 0 {
			r.Logf = func(format string, args ...any) { fmt.Fprintf(&log, format+"\n", args...) }
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		st, v, err := r.Run(ctx, sched)
		cancel()
		home.Close()
		if err != nil {
			t.Fatalf("%s: seed %d: the harness failed: %v; replay: %s", s.Name, seed, err, s.replay(seed))
		}
		sum.Add(seed, st, v)
		if len(v) > 0 {
			if log.Len() > 0 {
				t.Log("the failing run:\n" + log.String())
			}
			failed(seed, v, sched.Steps)
			if *flagSeed >= 0 {
				break
			}
		}
	}
	sum.Elapsed = time.Since(start)
	return sum
}

// replay is the command replaying seed's schedule: the home's, with the
// schedule-shaping flags this run was given.
func (s Suite) replay(seed uint64) string {
	return fmt.Sprintf(s.Replay, seed) + ReplayFlags()
}

// Add counts one schedule's stats and violations (each invariant once
// per schedule; seed among the failed ones when it broke any).
func (s *Summary) Add(seed uint64, st *Stats, v []Violation) {
	s.Schedules++
	s.Steps += st.Steps
	s.Operations += st.Operations
	s.OpErrors += st.OpErrors
	s.Deliveries += st.Deliveries
	s.Reports += st.Reports
	s.Restarts += st.Restarts
	s.Allocs += st.Allocs
	s.Evals += st.Evals
	for k, n := range st.Faults {
		s.Faults[k] += n
	}
	for k, n := range st.Work {
		if s.Work == nil {
			s.Work = map[string]int{}
		}
		s.Work[k] += n
	}
	if len(v) == 0 {
		return
	}
	s.Failed = append(s.Failed, seed)
	seen := map[string]bool{}
	for _, x := range v {
		if !seen[x.Invariant] {
			seen[x.Invariant] = true
			s.Violations[x.Invariant]++
		}
	}
}

// Print writes the summary table.
func (s *Summary) Print(w io.Writer) {
	switch {
	case Replaying():
		fmt.Fprintf(w, "chaos %s: seed %d played %d time(s) in %s\n", s.Home, *flagSeed, s.Schedules, s.Elapsed.Round(time.Second))
	case s.Schedules == 1:
		fmt.Fprintf(w, "chaos %s: 1 schedule in %s\n", s.Home, s.Elapsed.Round(time.Second))
	default:
		fmt.Fprintf(w, "chaos %s: %d schedules in %s\n", s.Home, s.Schedules, s.Elapsed.Round(time.Second))
	}
	row := func(k string, v any) { fmt.Fprintf(w, "  %-34s %v\n", k, v) }
	row("steps", s.Steps)
	row("operations (refused/failed)", fmt.Sprintf("%d (%d)", s.Operations, s.OpErrors))
	if s.Deliveries > 0 || s.Reports > 0 {
		// The in-process homes deliver evals and make nodes report; the
		// process-level leg's real server and agents do it themselves.
		row("deliveries", s.Deliveries)
		row("node reports", s.Reports)
	}
	row("restarts", s.Restarts)
	row("allocs at rest", s.Allocs)
	row("evals at rest", s.Evals)
	kinds := make([]string, 0, len(s.Faults))
	total := 0
	for k, n := range s.Faults {
		kinds = append(kinds, k)
		total += n
	}
	sort.Strings(kinds)
	row("faults", total)
	for _, k := range kinds {
		row("  "+k, s.Faults[k])
	}
	work := make([]string, 0, len(s.Work))
	for k := range s.Work {
		work = append(work, k)
	}
	sort.Strings(work)
	if len(work) > 0 {
		fmt.Fprintf(w, "  %-34s %s\n", "features' work", "")
	}
	for _, k := range work {
		row("  "+k, s.Work[k])
	}
	fmt.Fprintf(w, "  %-34s %s\n", "schedules violating", "")
	for _, inv := range Invariants {
		if slices.Contains(s.Unchecked, inv) {
			row("  "+inv, "not checked")
			continue
		}
		row("  "+inv, s.Violations[inv])
	}
	rows := slices.Clone(s.Extra)
	var other []string
	for inv := range s.Violations {
		if !slices.Contains(Invariants, inv) && !slices.Contains(rows, inv) {
			other = append(other, inv)
		}
	}
	sort.Strings(other)
	for _, inv := range append(rows, other...) {
		row("  "+inv, s.Violations[inv])
	}
	if len(s.Failed) > 0 {
		row("failing seeds", s.Failed)
	}
}
