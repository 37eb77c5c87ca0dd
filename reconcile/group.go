package reconcile

import (
	"github.com/drover-sched/drover/structs"
)

// groupRun reconciles one task group. Its allocs are in canonical order and
// every allocSet of the group is a bitmap over their positions. The fields
// below the first block are the working sets of one pass, named as in
// Nomad so that the two can be read side by side.
type groupRun struct {
	r      *reconciler
	name   string
	allocs []*allocInfo // canonical order
	words  int          // words of every allocSet of this group
	byID   map[string]int

	desired            *DesiredUpdates
	tg                 *structs.TaskGroup
	update             *structs.UpdateStrategy
	count              int
	dstate             *structs.DeploymentState
	existingDeployment bool // dstate belongs to the current deployment

	all           allocSet // the group's allocs still under consideration
	canaries      allocSet // current canaries that stay (healthy nodes)
	untainted     allocSet
	migrate       allocSet
	lost          allocSet
	disconnecting allocSet
	reconnecting  allocSet
	ignore        allocSet

	rescheduleNow   allocSet
	rescheduleLater []delayedAlloc
	lostLater       []delayedAlloc
	// stopFollowups: follow-up evals to attach to stops (lost allocs
	// waiting for stop_after_client_disconnect), by position.
	stopFollowups map[int]string
	followupCount int // follow-up evals created so far (their rank)

	names            *nameIndex
	placeFrom        int // the group's first entry in Result.Place
	destructiveFrom  int // the group's first entry in Result.DestructiveUpdate
	isCanarying      bool
	requiresCanaries bool
	inplace          allocSet
	destructive      allocSet
	outdated         allocSet // old-version allocs replaced while canarying
	place            []*Placement
}

// reconcile runs every step for the group, in Nomad's order (each step
// reads what the previous ones decided), and reports whether the group is
// done as far as the current deployment is concerned.
func (g *groupRun) reconcile() bool {
	r := g.r
	g.desired = r.counters(g.name)
	g.tg = r.job.LookupTaskGroup(g.name)
	g.all = g.everything()
	g.placeFrom, g.destructiveFrom = len(r.res.Place), len(r.res.DestructiveUpdate)
	if g.tg == nil {
		// The group was removed from the job: everything goes.
		g.desired.Stop = g.stopAll(g.all)
		return true
	}
	g.update = g.tg.Update
	if g.update == nil {
		g.update = r.job.Update
	}
	g.count = max(g.tg.Count, 0)

	// What the group has: set aside what no longer matters, then sort the
	// rest by node, connection and failure.
	g.initDeploymentState()
	g.ignoreOldTerminalBatchAllocs()
	g.stopUnneededCanaries()
	g.classifyByNode()
	g.classifyReschedulable()
	g.resolveReconnects()
	g.classifyDisconnecting()
	g.countDoneBatchNamesOnce()

	// What must wait: follow-up evals for delayed stops and reschedules.
	g.delayLostStops()
	g.scheduleLaterReschedules()

	// What must go and what must change.
	g.names = g.buildNameIndex()
	g.stopSurplus()
	g.decideUpdates()
	g.findOutdatedReplacements()
	g.setAsideCanaries()
	g.placeCanaries()

	// What must come, within what the deployment allows.
	g.placeAndReplace()
	g.migrations()
	g.renameDuplicates()

	// Where the deployment stands.
	g.maybeCreateDeployment()
	g.handBackInitializingDeployment()
	return g.deploymentComplete()
}

// everything returns the set of all the group's allocs.
func (g *groupRun) everything() allocSet {
	s := make(allocSet, g.words)
	for i := range s {
		s[i] = ^uint64(0)
	}
	if tail := len(g.allocs) % 64; tail != 0 {
		s[len(s)-1] = 1<<uint(tail) - 1
	}
	return s
}

// newSet returns an empty set of the group.
func (g *groupRun) newSet() allocSet { return make(allocSet, g.words) }

// nonTerminal returns the members of s that are not terminal.
func (g *groupRun) nonTerminal(s allocSet) allocSet {
	out := g.newSet()
	for p := range s.ascending() {
		if !g.allocs[p].alloc.TerminalStatus() {
			out.add(p)
		}
	}
	return out
}

// withClientStatus returns the members of s with the given client status.
func (g *groupRun) withClientStatus(s allocSet, status string) allocSet {
	out := g.newSet()
	for p := range s.ascending() {
		if g.allocs[p].alloc.ClientStatus == status {
			out.add(p)
		}
	}
	return out
}

// withIDs returns the members of s whose alloc ID is in ids.
func (g *groupRun) withIDs(s allocSet, ids []string) allocSet {
	out := g.newSet()
	for _, id := range ids {
		if p, ok := g.position(id); ok && s.has(p) {
			out.add(p)
		}
	}
	return out
}

// position finds an alloc of the group by ID. The ID map is built on first
// use: only canaries and reconnects need it.
func (g *groupRun) position(id string) (int, bool) {
	if g.byID == nil {
		g.byID = make(map[string]int, len(g.allocs))
		for p := len(g.allocs) - 1; p >= 0; p-- {
			g.byID[g.allocs[p].alloc.ID] = p
		}
	}
	p, ok := g.byID[id]
	return p, ok
}

// indexes returns the name indexes of the members of the sets.
func (g *groupRun) indexes(sets ...allocSet) []uint {
	var out []uint
	for _, s := range sets {
		for p := range s.ascending() {
			out = append(out, g.allocs[p].index)
		}
	}
	return out
}

// stopAlloc records a stop.
func (g *groupRun) stopAlloc(p int, clientStatus, description, followup string) {
	g.r.res.Stop = append(g.r.res.Stop, &Stop{
		Alloc:             g.allocs[p].alloc,
		ClientStatus:      clientStatus,
		StatusDescription: description,
		FollowupEvalID:    followup,
	})
}

// stopEach records a stop of every member of s.
func (g *groupRun) stopEach(s allocSet, clientStatus, description string) {
	for p := range s.ascending() {
		g.stopAlloc(p, clientStatus, description, "")
	}
}

// stopAll stops every alloc of s that is still somewhere, as for a stopped
// job or a removed group, and returns how many allocs s has (Nomad's
// counter counts them all, including those it does not list). Allocs on
// lost nodes are stopped as lost; allocs that the node split ignores are
// listed only when unknown.
func (g *groupRun) stopAll(s allocSet) uint64 {
	t := g.splitByNode(s)
	g.stopEach(t.untainted, "", StatusAllocNotNeeded)
	g.stopEach(t.migrate, "", StatusAllocNotNeeded)
	g.stopEach(t.lost, structs.AllocClientStatusLost, StatusAllocLost)
	g.stopEach(t.disconnecting, "", StatusAllocNotNeeded)
	g.stopEach(t.reconnecting, "", StatusAllocNotNeeded)
	g.stopEach(g.withClientStatus(t.ignore, structs.AllocClientStatusUnknown), "", StatusAllocNotNeeded)
	return uint64(s.len())
}

// initDeploymentState finds the group's state in the current deployment, or
// starts a new one (with the update strategy's revert / promote / deadline
// settings) that joins a deployment only if one is created for the group.
func (g *groupRun) initDeploymentState() {
	if d := g.r.deployment; d != nil {
		if s := d.TaskGroups[g.name]; s != nil {
			g.dstate, g.existingDeployment = s, true
			return
		}
	}
	g.dstate = &structs.DeploymentState{}
	if !g.update.IsEmpty() {
		g.dstate.AutoRevert = g.update.AutoRevert
		g.dstate.AutoPromote = g.update.AutoPromote
		g.dstate.ProgressDeadline = g.update.ProgressDeadline
	}
}

// ignoreOldTerminalBatchAllocs sets aside the terminal allocs of a batch
// job that ran an older version (or incarnation): their work belongs to a
// previous specification and must neither count nor be re-run.
func (g *groupRun) ignoreOldTerminalBatchAllocs() {
	if !g.r.in.Batch {
		return
	}
	job := g.r.job
	var n uint64
	for p := range g.all.ascending() {
		ai := g.allocs[p]
		older := ai.version < job.Version || ai.createIndex < job.CreateIndex
		if older && ai.alloc.TerminalStatus() {
			g.all.remove(p)
			n++
		}
	}
	g.desired.Ignore += n
}

// stopUnneededCanaries stops the unpromoted canaries of the old deployment
// and of a failed current one: they were placed for a rollout that will not
// happen. It then collects the current deployment's canaries; those on
// draining or lost nodes are stopped (not counted: canaries come and go
// during a deployment) and the rest are g.canaries. A canary that is
// already terminal and was asked to migrate has been moved away (its
// replacement is a canary of its own), and one already stopped as lost
// is gone: either is set aside, neither stopped again nor counted, so the
// missing canary is placed. (Nomad 1.6 counts them as live canaries, so a
// drained canary, or a lost one whose replacement found no room when it
// was stopped, is never replaced and the deployment can never be
// promoted.)
func (g *groupRun) stopUnneededCanaries() {
	r := g.r
	var ids []string
	collect := func(d *structs.Deployment, unpromotedOnly bool) {
		for _, s := range d.TaskGroups {
			if s != nil && (!unpromotedOnly || !s.Promoted) {
				ids = append(ids, s.PlacedCanaries...)
			}
		}
	}
	if r.oldDeployment != nil {
		collect(r.oldDeployment, true)
	}
	if r.deployment != nil && r.deployment.Status == structs.DeploymentStatusFailed {
		collect(r.deployment, true)
	}
	stop := g.withIDs(g.all, ids)
	g.stopEach(stop, "", StatusAllocNotNeeded)
	g.desired.Stop += uint64(stop.len())
	g.all = g.all.minus(stop)

	g.canaries = g.newSet()
	if r.deployment == nil {
		return
	}
	ids = ids[:0]
	collect(r.deployment, false)
	current := g.withIDs(g.all, ids)
	moved := g.newSet()
	for p := range current.ascending() {
		if a := g.allocs[p].alloc; a.TerminalStatus() && (a.DesiredTransition.ShouldMigrate() || a.ClientStatus == structs.AllocClientStatusLost) {
			moved.add(p)
		}
	}
	g.all = g.all.minus(moved)
	t := g.splitByNode(current.minus(moved))
	g.stopEach(t.migrate, "", StatusAllocMigrating)
	g.stopEach(t.lost, structs.AllocClientStatusLost, StatusAllocLost)
	g.canaries = t.untainted
	g.all = g.all.minus(t.migrate, t.lost)
}

// classifyByNode splits the group's allocs by the state of their node and
// connection (see splitByNode). Allocs the split ignores are counted.
func (g *groupRun) classifyByNode() {
	t := g.splitByNode(g.all)
	g.untainted, g.migrate, g.lost = t.untainted, t.migrate, t.lost
	g.disconnecting, g.reconnecting, g.ignore = t.disconnecting, t.reconnecting, t.ignore
	g.desired.Ignore += uint64(g.ignore.len())
}

// classifyReschedulable takes the failed allocs out of the untainted set
// that are to be replaced now, and notes those to be replaced later.
func (g *groupRun) classifyReschedulable() {
	g.untainted, g.rescheduleNow, g.rescheduleLater = g.splitByReschedule(g.untainted, false)
}

// countDoneBatchNamesOnce sets aside, in a batch group, the allocs the
// server stopped that ran successfully (kept so that their work is not
// run again) whose name a wanted alloc of the group also holds: a batch
// alloc marked lost and replaced, whose node came back and reported it
// complete. Its work counts once, with its replacement; counted twice,
// another name of the group is never placed. (Nomad 1.6 counts both; found
// by the process-level chaos suite.)
func (g *groupRun) countDoneBatchNamesOnce() {
	if !g.r.in.Batch {
		return
	}
	held := map[uint]bool{}
	for p := range g.untainted.plus(g.migrate, g.rescheduleNow).ascending() {
		if ai := g.allocs[p]; ai.generated && ai.alloc.DesiredStatus == structs.AllocDesiredStatusRun {
			held[ai.index] = true
		}
	}
	var n uint64
	for p := range g.untainted.ascending() {
		ai := g.allocs[p]
		if ai.generated && held[ai.index] && ai.alloc.DesiredStatus != structs.AllocDesiredStatusRun && ai.alloc.RanSuccessfully() {
			g.untainted.remove(p)
			n++
		}
	}
	g.desired.Ignore += n
}

// resolveReconnects handles allocs whose node came back: failed ones and
// unwanted ones are stopped, and between a reconnecting alloc and its
// replacement one is kept (see pickReconnects). This must happen before
// anything else looks at the replacements. Kept reconnecting allocs join
// the untainted set.
func (g *groupRun) resolveReconnects() {
	if g.reconnecting.empty() {
		return
	}
	reconnect, stop := g.pickReconnects()
	g.desired.Stop += uint64(stop.len())
	g.untainted = g.untainted.minus(stop)
	g.migrate = g.migrate.minus(stop)
	g.lost = g.lost.minus(stop)
	g.disconnecting = g.disconnecting.minus(stop)
	g.reconnecting = g.reconnecting.minus(stop)
	g.ignore = g.ignore.minus(stop)
	g.markReconnected(reconnect)
	g.untainted = g.untainted.plus(reconnect)
}

// classifyDisconnecting decides about allocs on nodes that just
// disconnected: they become unknown with a follow-up eval at their
// max_client_disconnect timeout, and, by their reschedule policy, are
// replaced now, later, or not (then they stay counted as untainted).
func (g *groupRun) classifyDisconnecting() {
	if g.disconnecting.empty() {
		return
	}
	untainted, now, later := g.splitByReschedule(g.disconnecting, true)
	g.rescheduleNow = g.rescheduleNow.plus(now)
	g.untainted = g.untainted.plus(untainted)
	g.rescheduleLater = append(g.rescheduleLater, later...)
	g.markDisconnecting()
}

// delayLostStops finds the lost allocs whose node will stop them by itself
// later (stop_after_client_disconnect): they are stopped now with a
// follow-up eval at that time, and the group places nothing until then.
func (g *groupRun) delayLostStops() {
	if g.lost.empty() {
		return
	}
	g.lostLater = g.stopAfterDelays(g.lost)
	ids := g.followups(g.lostLater, structs.EvalTriggerRetryFailedAlloc, FollowupDescReschedule, false)
	g.stopFollowups = make(map[int]string, len(ids))
	for i, d := range g.lostLater {
		g.stopFollowups[d.pos] = ids[i]
	}
}

// scheduleLaterReschedules creates the follow-up evals that will replace
// failed allocs once their reschedule delay has passed, and attaches each
// eval to its alloc (on the disconnect update when the alloc is also
// disconnecting, otherwise as an attribute update).
func (g *groupRun) scheduleLaterReschedules() {
	if len(g.rescheduleLater) == 0 {
		return
	}
	res := g.r.res
	ids := g.followups(g.rescheduleLater, structs.EvalTriggerRetryFailedAlloc, FollowupDescReschedule, false)
	for i, d := range g.rescheduleLater {
		a := g.allocs[d.pos].alloc
		if du, ok := res.DisconnectUpdates[a.ID]; ok {
			du.FollowupEvalID = ids[i]
			continue
		}
		c := a.Copy()
		c.FollowupEvalID = ids[i]
		res.AttributeUpdates[a.ID] = c
	}
}

// buildNameIndex seeds the group's name index with every name in use:
// untainted (including canaries), migrating, rescheduled and lost allocs.
func (g *groupRun) buildNameIndex() *nameIndex {
	return newNameIndex(g.count, g.indexes(g.untainted, g.migrate, g.rescheduleNow, g.lost))
}

// canarying reports whether the deployment wants canaries that are not yet
// promoted: the rollout then waits for promotion.
func (g *groupRun) canarying() bool {
	return g.dstate != nil && g.dstate.DesiredCanaries != 0 && !g.dstate.Promoted
}
