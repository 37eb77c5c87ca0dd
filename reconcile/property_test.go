package reconcile

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"testing"
	"testing/quick"
	"time"

	"github.com/drover-sched/drover/structs"
)

// chooser drives the random world generator: math/rand for property
// tests, the fuzzer's bytes for FuzzReconcile.
type chooser interface {
	intn(n int) int
}

type randChooser struct{ r *rand.Rand }

func (c randChooser) intn(n int) int { return c.r.Intn(n) }

// byteChooser reads choices from fuzz input; once it runs out, every
// choice is 0.
type byteChooser struct {
	data []byte
	pos  int
}

func (c *byteChooser) intn(n int) int {
	if c.pos >= len(c.data) {
		return 0
	}
	b := int(c.data[c.pos])
	c.pos++
	if n > 256 {
		b = b<<8 | int(c.next())
	}
	return b % n
}

func (c *byteChooser) next() byte {
	if c.pos >= len(c.data) {
		return 0
	}
	c.pos++
	return c.data[c.pos-1]
}

// genOptions narrows the random worlds.
type genOptions struct {
	// simple: no canaries, no update strategy, no tainted nodes, no
	// deployment, no failed or terminal allocs, distinct names.
	simple bool
	// dupNames: with simple, names may repeat.
	dupNames bool
}

func pick[T any](c chooser, xs ...T) T { return xs[c.intn(len(xs))] }

// randomWorld builds an arbitrary world: any mix of alloc states, nodes,
// deployments, reschedule and disconnect settings, including states a live
// cluster would rarely produce (malformed names, missing jobs, replacement
// chains pointing anywhere).
func randomWorld(c chooser, o genOptions) *world {
	var groups []*structs.TaskGroup
	for i := range 1 + c.intn(2) {
		tg := group([]string{"web", "api"}[i], c.intn(7))
		if !o.simple {
			switch c.intn(4) {
			case 1:
				rolling(1+c.intn(3), 0)(tg)
			case 2:
				rolling(1+c.intn(3), 1+c.intn(3))(tg)
			case 3:
				rolling(c.intn(2), c.intn(2))(tg)
			}
			switch c.intn(5) {
			case 1:
				noResched(tg)
			case 2:
				resched(1+c.intn(3), time.Duration(1+c.intn(120))*time.Minute, time.Duration(c.intn(60))*time.Second,
					pick(c, structs.DelayFunctionConstant, structs.DelayFunctionExponential, structs.DelayFunctionFibonacci, ""),
					time.Duration(c.intn(10))*time.Minute, c.intn(4) == 0)(tg)
			}
			if c.intn(2) == 0 {
				maxDisconnect(time.Duration(c.intn(120)) * time.Minute)(tg)
			}
			if c.intn(3) == 0 {
				stopAfter(time.Duration(c.intn(10)) * time.Minute)(tg)
			}
		}
		groups = append(groups, tg)
	}
	w := newWorld(groups...)
	w.job.Version = uint64(1 + c.intn(3))
	w.batch = !o.simple && c.intn(4) == 0
	w.sdc = !o.simple && c.intn(2) == 0
	if !o.simple {
		switch c.intn(8) {
		case 0:
			w.job.Stop = true
		case 1:
			w.purged = true
		case 2:
			w.job.Multiregion = &structs.Multiregion{Regions: []*structs.MultiregionRegion{{Name: "a"}}}
		}
		w.draining("n3")
		w.down("n4")
		w.disconnected("n5")
		w.gone("n6")
		w.readyAgain("n7")
		if c.intn(3) > 0 {
			d := w.deployment("d1", pick(c, structs.DeploymentStatusRunning, structs.DeploymentStatusPaused,
				structs.DeploymentStatusFailed, structs.DeploymentStatusSuccessful, structs.DeploymentStatusCancelled,
				structs.DeploymentStatusPending, structs.DeploymentStatusInitializing, structs.DeploymentStatusBlocked,
				structs.DeploymentStatusUnblocking))
			d.JobVersion = uint64(c.intn(4))
			for _, tg := range groups {
				if c.intn(3) > 0 {
					d.TaskGroups[tg.Name] = &structs.DeploymentState{
						DesiredTotal: c.intn(6), DesiredCanaries: c.intn(3), Promoted: c.intn(2) == 0,
						HealthyAllocs: c.intn(6), AutoPromote: c.intn(2) == 0,
					}
				}
			}
		}
	}

	groupNames := []string{"web", "api", "old"}
	n := c.intn(14)
	var ids []string
	for i := range n {
		ids = append(ids, fmt.Sprintf("a%02d", i))
	}
	usedNames := map[string]bool{}
	for i, id := range ids {
		grp := groupNames[c.intn(len(groups))]
		if !o.simple && c.intn(10) == 0 {
			grp = "old"
		}
		index := uint(c.intn(10))
		if o.simple && !o.dupNames {
			for usedNames[grp+fmt.Sprint(index)] {
				index++
			}
			usedNames[grp+fmt.Sprint(index)] = true
		}
		var opts []func(*world, *structs.Allocation)
		if v := uint64(c.intn(int(w.job.Version) + 1)); v != w.job.Version {
			if tg := w.job.LookupTaskGroup(grp); tg != nil && c.intn(2) == 0 {
				opts = append(opts, ownGroup(v, tg))
			} else {
				opts = append(opts, ver(v))
			}
		}
		if grp == "old" {
			opts = append(opts, ownGroup(0, group("old", 2, maxDisconnect(time.Hour))))
		}
		if o.simple {
			if c.intn(4) == 0 {
				opts = append(opts, pending)
			}
			opts = append(opts, kind(pick(c, UpdateIgnore, UpdateInPlace, UpdateDestructive)))
			w.alloc(id, grp, index, opts...)
			continue
		}
		opts = append(opts, onNode(pick(c, "n1", "n1", "n2", "n3", "n4", "n5", "n6", "n7")))
		switch c.intn(9) {
		case 1:
			opts = append(opts, pending)
		case 2:
			opts = append(opts, complete)
		case 3:
			opts = append(opts, failedAt(time.Duration(c.intn(120))*time.Second))
		case 4:
			opts = append(opts, failed)
		case 5:
			opts = append(opts, lostStatus)
		case 6:
			opts = append(opts, unknownSince(time.Duration(c.intn(180))*time.Minute))
		}
		switch c.intn(8) {
		case 1:
			opts = append(opts, stopped)
		case 2:
			opts = append(opts, evicted)
		}
		if c.intn(6) == 0 {
			opts = append(opts, migrateFlag)
		}
		if c.intn(12) == 0 {
			opts = append(opts, forceResched)
		}
		if c.intn(12) == 0 {
			opts = append(opts, reschedFlag)
		}
		if c.intn(4) == 0 {
			opts = append(opts, disconnectedSince(time.Duration(c.intn(180))*time.Minute))
		}
		if c.intn(6) == 0 {
			opts = append(opts, lostSince(time.Duration(c.intn(20))*time.Minute))
		}
		if c.intn(5) == 0 {
			opts = append(opts, next(pick(c, append(ids, "zz")...)))
		}
		if c.intn(5) == 0 {
			opts = append(opts, followup(pick(c, "eval-main", "eval-other")))
		}
		if c.intn(4) == 0 {
			opts = append(opts, rescheduled(time.Duration(c.intn(200))*time.Minute, time.Duration(c.intn(600))*time.Second,
				time.Duration(c.intn(100))*time.Minute, time.Duration(c.intn(600))*time.Second))
		}
		if c.intn(3) == 0 {
			opts = append(opts, inDeployment(pick(c, "d1", "d0"), pick(c, healthy, unhealthy, nil), c.intn(2) == 0))
		}
		if c.intn(4) == 0 {
			opts = append(opts, score(float64(c.intn(100))/100))
		}
		opts = append(opts, kind(pick(c, UpdateIgnore, UpdateInPlace, UpdateDestructive)))
		a := w.alloc(id, grp, index, opts...)
		switch c.intn(20) {
		case 0:
			a.Name = "garbage"
		case 1:
			a.Name = fmt.Sprintf("example.%s[%d]", grp, 4000000000+i)
		case 2:
			a.Job = nil
		}
		if w.dep != nil && a.DeploymentStatus.IsCanary() {
			if s := w.dep.TaskGroups[grp]; s != nil {
				s.PlacedCanaries = append(s.PlacedCanaries, a.ID)
			}
		}
	}
	return w
}

// categories returns, per existing alloc ID, the decisions taken about it
// (a stop counts once however often it is listed).
func categories(res *Result) map[string][]string {
	out := map[string][]string{}
	add := func(id, cat string) {
		if !slices.Contains(out[id], cat) {
			out[id] = append(out[id], cat)
		}
	}
	for _, s := range res.Stop {
		add(s.Alloc.ID, "stop")
	}
	for _, a := range res.InPlaceUpdate {
		add(a.ID, "inplace")
	}
	for _, d := range res.DestructiveUpdate {
		add(d.StopAlloc.ID, "destructive")
	}
	return out
}

func TestPropertyOneDecisionPerAlloc(t *testing.T) {
	prop := func(seed int64) bool {
		w := randomWorld(randChooser{rand.New(rand.NewSource(seed))}, genOptions{})
		for id, cats := range categories(Reconcile(w.input())) {
			if len(cats) > 1 {
				t.Logf("seed %d: alloc %s is in %v", seed, id, cats)
				return false
			}
		}
		return true
	}
	if err := quick.Check(prop, &quick.Config{MaxCount: 3000}); err != nil {
		t.Fatal(err)
	}
}

func TestPropertySimpleWorldsConverge(t *testing.T) {
	prop := func(seed int64) bool {
		w := randomWorld(randChooser{rand.New(rand.NewSource(seed))}, genOptions{simple: true})
		res := Reconcile(w.input())
		live := map[string][]string{} // group -> names
		gone := map[string]bool{}
		for _, s := range res.Stop {
			gone[s.Alloc.ID] = true
		}
		for _, d := range res.DestructiveUpdate {
			gone[d.StopAlloc.ID] = true
			live[d.PlaceTaskGroup.Name] = append(live[d.PlaceTaskGroup.Name], d.PlaceName)
		}
		for _, a := range w.allocs {
			if !gone[a.ID] {
				live[a.TaskGroup] = append(live[a.TaskGroup], a.Name)
			}
		}
		for _, p := range res.Place {
			live[p.TaskGroup.Name] = append(live[p.TaskGroup.Name], p.Name)
		}
		for _, tg := range w.job.TaskGroups {
			names := live[tg.Name]
			sorted := slices.Sorted(slices.Values(names))
			if len(names) != tg.Count || len(slices.Compact(sorted)) != len(names) {
				t.Logf("seed %d: group %s count %d, live %v", seed, tg.Name, tg.Count, names)
				return false
			}
		}
		return true
	}
	if err := quick.Check(prop, &quick.Config{MaxCount: 3000}); err != nil {
		t.Fatal(err)
	}
}

// TestPropertyReplacementsTakeFreeNames: in worlds with duplicate names,
// a replacement never leaves its name live twice while a name below the
// count is free (issue 14, situation 3).
func TestPropertyReplacementsTakeFreeNames(t *testing.T) {
	prop := func(seed int64) bool {
		w := randomWorld(randChooser{rand.New(rand.NewSource(seed))}, genOptions{simple: true, dupNames: true})
		res := Reconcile(w.input())
		gone := map[string]bool{}
		for _, s := range res.Stop {
			gone[s.Alloc.ID] = true
		}
		live := map[string]map[string]int{} // group -> name -> live allocs
		replacement := map[string]map[string]bool{}
		add := func(grp, name string, replaces bool) {
			if live[grp] == nil {
				live[grp], replacement[grp] = map[string]int{}, map[string]bool{}
			}
			live[grp][name]++
			if replaces {
				replacement[grp][name] = true
			}
		}
		for _, d := range res.DestructiveUpdate {
			gone[d.StopAlloc.ID] = true
			add(d.PlaceTaskGroup.Name, d.PlaceName, true)
		}
		for _, a := range w.allocs {
			if !gone[a.ID] {
				add(a.TaskGroup, a.Name, false)
			}
		}
		for _, p := range res.Place {
			add(p.TaskGroup.Name, p.Name, p.PreviousAlloc != nil)
		}
		for _, tg := range w.job.TaskGroups {
			free := false
			for i := range tg.Count {
				if live[tg.Name][structs.AllocName(w.jobID, tg.Name, uint(i))] == 0 {
					free = true
				}
			}
			for name, n := range live[tg.Name] {
				if n > 1 && replacement[tg.Name][name] && free {
					t.Logf("seed %d: group %s count %d: a replacement keeps %s live %d times while a name is free", seed, tg.Name, tg.Count, name, n)
					return false
				}
			}
		}
		return true
	}
	if err := quick.Check(prop, &quick.Config{MaxCount: 3000}); err != nil {
		t.Fatal(err)
	}
}

func TestPropertyDeterministic(t *testing.T) {
	prop := func(seed int64) bool {
		r := rand.New(rand.NewSource(seed))
		w := randomWorld(randChooser{r}, genOptions{})
		in := w.input()
		first := Reconcile(in)
		again := Reconcile(in)
		shuffled := in
		shuffled.Allocs = slices.Clone(in.Allocs)
		r.Shuffle(len(shuffled.Allocs), func(i, j int) {
			shuffled.Allocs[i], shuffled.Allocs[j] = shuffled.Allocs[j], shuffled.Allocs[i]
		})
		third := Reconcile(shuffled)
		if !reflect.DeepEqual(first, again) || !reflect.DeepEqual(first, third) {
			t.Logf("seed %d: results differ", seed)
			return false
		}
		return true
	}
	if err := quick.Check(prop, &quick.Config{MaxCount: 2000}); err != nil {
		t.Fatal(err)
	}
}

// TestReconcileDoesNotModifyInput checks that the input allocs (with their
// jobs) and the deployment are left as they were.
func TestReconcileDoesNotModifyInput(t *testing.T) {
	snapshot := func(in Input) string {
		b, err := json.Marshal(struct {
			Allocs     []*structs.Allocation
			Deployment *structs.Deployment
			Job        *structs.Job
		}{in.Allocs, in.Deployment, in.Job})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for seed := int64(0); seed < 300; seed++ {
		w := randomWorld(randChooser{rand.New(rand.NewSource(seed))}, genOptions{})
		in := w.input()
		before := snapshot(in)
		Reconcile(in)
		if after := snapshot(in); after != before {
			t.Fatalf("seed %d: input modified", seed)
		}
	}
}

// FuzzReconcile feeds arbitrary alloc states (decoded from the fuzzer's
// bytes by the random world generator) to Reconcile, which must not panic
// and must keep one decision per alloc.
func FuzzReconcile(f *testing.F) {
	for seed := range int64(40) {
		r := rand.New(rand.NewSource(seed))
		b := make([]byte, 64+r.Intn(512))
		r.Read(b)
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		w := randomWorld(&byteChooser{data: data}, genOptions{})
		res := Reconcile(w.input())
		for id, cats := range categories(res) {
			if len(cats) > 1 {
				t.Fatalf("alloc %s is in %v", id, cats)
			}
		}
	})
}
