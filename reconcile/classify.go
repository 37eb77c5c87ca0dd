package reconcile

import (
	"time"

	"github.com/drover-sched/drover/structs"
)

// nodeSplit is a set of allocs split by the state of their node and
// connection, as Nomad's filterByTainted:
//   - untainted: on healthy nodes (or terminal, or unknown but still
//     wanted): they count towards the group;
//   - migrate: asked to migrate (a draining node): stop and place again;
//   - lost: on down or vanished nodes, pending on a disconnected node, or
//     disconnected for longer than max_client_disconnect;
//   - disconnecting: running on a node that just disconnected (with
//     disconnect support): they become unknown;
//   - reconnecting: were unknown and their node is back (or failed while
//     disconnected): keep them or their replacement;
//   - ignore: nothing to do (stopped replacements of disconnected allocs,
//     failed reconnects the server already stopped).
type nodeSplit struct {
	untainted, migrate, lost, disconnecting, reconnecting, ignore allocSet
}

// splitByNode splits s (see nodeSplit). The checks run in Nomad's order,
// which matters: for example a failed alloc that was disconnected is a
// failed reconnect wherever its node is, and a terminal alloc never
// migrates.
func (g *groupRun) splitByNode(s allocSet) nodeSplit {
	t := nodeSplit{g.newSet(), g.newSet(), g.newSet(), g.newSet(), g.newSet(), g.newSet()}
	in := g.r.in
	for p := range s.ascending() {
		ai := g.allocs[p]
		a := ai.alloc
		supports := ai.supportsDisconnect(in.SupportsDisconnectedClients)

		// Only allocs that may come back from a disconnect take the
		// reconnect paths.
		reconnect, expired := false, false
		if supports && (a.ClientStatus == structs.AllocClientStatusUnknown ||
			a.ClientStatus == structs.AllocClientStatusRunning ||
			a.ClientStatus == structs.AllocClientStatusFailed) {
			reconnect = needsToReconnect(a)
			if reconnect {
				expired = ai.expired(in.Now)
			}
		}
		if supports && reconnect && a.DesiredStatus == structs.AllocDesiredStatusRun &&
			a.ClientStatus == structs.AllocClientStatusFailed {
			t.reconnecting.add(p) // a failed reconnect, stopped later
			continue
		}

		node, tainted := in.TaintedNodes[a.NodeID]
		if node != nil {
			switch node.Status {
			case structs.NodeStatusDisconnected:
				if !supports {
					if in.Batch && a.ClientStatus == structs.AllocClientStatusComplete {
						// A batch alloc that ran to completion
						// before its node went away is done work:
						// judged as on a down node (below), not
						// lost. Nomad 1.6 marks it lost: it then
						// shows lost, and its name was placed
						// again while the node was away (chaos
						// seed 1308; ORACLE.md, correction 8).
						break
					}
					t.lost.add(p)
					continue
				}
				if a.ClientStatus == structs.AllocClientStatusRunning {
					t.disconnecting.add(p)
					continue
				}
				if a.ClientStatus == structs.AllocClientStatusPending {
					t.lost.add(p) // it never started: nothing to wait for
					continue
				}
			case structs.NodeStatusReady:
				if reconnect {
					if expired {
						t.lost.add(p)
					} else {
						t.reconnecting.add(p)
					}
					continue
				}
			}
		}

		if a.TerminalStatus() && !reconnect {
			if supports && a.ServerTerminalStatus() {
				// Most likely the stopped replacement of a disconnected
				// alloc: nothing to do, but counted as ignored. Allocs
				// that ended on their own (complete, failed) count as
				// for any group. (Nomad 1.6 ignores every terminal alloc
				// of such a group: its failed allocs are not
				// rescheduled and its finished batch allocs run again.)
				t.ignore.add(p)
			} else {
				t.untainted.add(p)
			}
			continue
		}
		if a.DesiredTransition.ShouldMigrate() {
			t.migrate.add(p)
			continue
		}
		if supports && ai.expired(in.Now) {
			t.lost.add(p)
			continue
		}
		if supports && a.ClientStatus == structs.AllocClientStatusUnknown &&
			a.DesiredStatus == structs.AllocDesiredStatusRun {
			t.untainted.add(p) // unknown, but we want it back
			continue
		}
		if supports && reconnect && a.ClientStatus == structs.AllocClientStatusFailed &&
			a.DesiredStatus == structs.AllocDesiredStatusStop {
			t.ignore.add(p)
			continue
		}
		if !tainted {
			switch {
			case reconnect && expired:
				t.lost.add(p)
			case reconnect:
				t.reconnecting.add(p)
			default:
				t.untainted.add(p)
			}
			continue
		}
		if node == nil || node.TerminalStatus() {
			t.lost.add(p) // the node is down or no longer exists
			continue
		}
		t.untainted.add(p)
	}
	return t
}

// delayedAlloc is an alloc (by position) that needs something done at a
// later time: a reschedule, a disconnect timeout or a client-side stop.
type delayedAlloc struct {
	pos int
	at  time.Time
}

// splitByReschedule splits s into allocs that stay (untainted), failed
// allocs to replace now, and failed allocs to replace later (with their
// time). With disconnecting set, s holds allocs on nodes that just
// disconnected: they are judged by their reschedule policy as if they had
// failed now, and those not replaced are not kept as untainted from this
// split alone.
//
// Allocs that were already replaced (terminal with a next alloc), server
// stopped ones, and complete or lost service allocs are dropped: they are
// neither counted nor replaced.
func (g *groupRun) splitByReschedule(s allocSet, disconnecting bool) (untainted, now allocSet, later []delayedAlloc) {
	untainted, now = g.newSet(), g.newSet()
	batch := g.r.in.Batch
	for p := range s.ascending() {
		ai := g.allocs[p]
		a := ai.alloc
		if disconnecting && a.ClientStatus == structs.AllocClientStatusUnknown {
			continue // already unknown: an interrupted canary
		}
		if a.NextAllocation != "" && a.TerminalStatus() {
			continue
		}
		keep, drop := classifyForReschedule(a, batch)
		if keep && !disconnecting {
			untainted.add(p)
		}
		if drop {
			continue
		}
		eligibleNow, eligibleLater, at := g.reschedulable(ai, disconnecting)
		if eligibleNow {
			now.add(p)
			continue
		}
		untainted.add(p)
		if eligibleLater {
			later = append(later, delayedAlloc{pos: p, at: at})
		}
	}
	return untainted, now, later
}

// classifyForReschedule tells whether an alloc simply counts (keep), is
// dropped from the group's accounting (drop), or must be checked for
// rescheduling (neither).
//
// Batch: a stopped alloc that ran successfully counts (its work is done);
// other stopped or evicted ones are dropped; failed ones are checked;
// anything else counts. Service: stopped, evicted, complete and lost
// allocs are dropped; everything else is checked.
func classifyForReschedule(a *structs.Allocation, batch bool) (keep, drop bool) {
	if batch {
		switch a.DesiredStatus {
		case structs.AllocDesiredStatusStop:
			if a.RanSuccessfully() {
				return true, false
			}
			return false, true
		case structs.AllocDesiredStatusEvict:
			return false, true
		}
		if a.ClientStatus == structs.AllocClientStatusFailed {
			return false, false
		}
		return true, false
	}
	switch a.DesiredStatus {
	case structs.AllocDesiredStatusStop, structs.AllocDesiredStatusEvict:
		return false, true
	}
	switch a.ClientStatus {
	case structs.AllocClientStatusComplete, structs.AllocClientStatusLost:
		return false, true
	}
	return false, false
}

// reschedulable decides whether a failed (or disconnecting) alloc is
// replaced now, later at the returned time, or not at all:
//   - an alloc of the active deployment is not replaced unless someone
//     asked for it (the deployment's health logic owns it), or unless it
//     was reported healthy before it failed: the health logic has
//     counted it and will not look at it again, so holding it back
//     would leave it failed for good once the deployment completes
//     (Nomad 1.6 does; found by the chaos suite);
//   - a forced reschedule is now;
//   - the time counts from the failure; for a disconnecting alloc, from
//     now; for an unknown alloc whose disconnect timeout is this
//     evaluation, from its disconnect;
//   - when the policy allows it: now if its time is within the reschedule
//     window or this evaluation is the alloc's follow-up; later if no
//     follow-up eval was attached yet (one that is attached will come) or
//     the alloc is disconnecting (its attached eval is a disconnect
//     timeout, which does not reschedule).
func (g *groupRun) reschedulable(ai *allocInfo, disconnecting bool) (now, later bool, at time.Time) {
	r := g.r
	a := ai.alloc
	if d := r.deployment; d != nil && a.DeploymentID == d.ID && d.Active() && !a.DesiredTransition.ShouldReschedule() &&
		!a.DeploymentStatus.IsHealthy() {
		return false, false, time.Time{}
	}
	now = a.DesiredTransition.ShouldForceReschedule()
	var eligible bool
	switch {
	case disconnecting:
		// It has not failed; had it failed now, when could it be replaced?
		at, eligible = ai.rescheduleTimeAfter(r.in.Now)
	case a.ClientStatus == structs.AllocClientStatusUnknown && a.FollowupEvalID == r.in.EvalID:
		// Its disconnect timeout is being processed: judge it as if it
		// had failed when it disconnected.
		at, eligible = ai.rescheduleTimeAfter(a.LastUnknown())
	default:
		at, eligible = ai.rescheduleTime()
	}
	if eligible && (a.FollowupEvalID == r.in.EvalID || at.Sub(r.in.Now) <= rescheduleWindow) {
		return true, false, at
	}
	if eligible && (a.FollowupEvalID == "" || disconnecting) {
		later = true
	}
	return now, later, at
}

// pickReconnects decides about reconnecting allocs. Failed ones are stopped
// as failed; ones the server no longer wants (stopped, asked to move, or of
// an older job version) are stopped. For the others, the alloc and its
// live replacement are compared with pickReconnectingAlloc and the loser
// is stopped, except a failed replacement, which is already gone. The
// live replacement is found by following NextAllocation past the
// replacements the server already stopped (a replacement that failed and
// was itself replaced): Nomad 1.6 looks only at the direct replacement,
// keeps both, and then stops other names as surplus. It returns the
// reconnecting allocs to keep and every alloc stopped here.
func (g *groupRun) pickReconnects() (reconnect, stop allocSet) {
	job := g.r.job
	stop = g.newSet()
	for p := range g.reconnecting.ascending() {
		ai := g.allocs[p]
		a := ai.alloc
		if !a.ServerTerminalStatus() && a.ClientStatus == structs.AllocClientStatusFailed {
			stop.add(p)
			g.stopAlloc(p, structs.AllocClientStatusFailed, StatusAllocRescheduled, "")
			continue
		}
		if a.DesiredStatus != structs.AllocDesiredStatusRun || wantsTransition(a) ||
			ai.version < job.Version || ai.createIndex < job.CreateIndex {
			stop.add(p)
			g.stopAlloc(p, "", StatusAllocNotNeeded, "")
			continue
		}
		q, ok := g.liveReplacement(a)
		if !ok {
			continue
		}
		replacement := g.allocs[q]
		if pickReconnectingAlloc(ai, replacement) == replacement {
			if !stop.has(p) {
				stop.add(p)
				g.stopAlloc(p, "", StatusAllocNotNeeded, "")
			}
		} else if replacement.alloc.ClientStatus != structs.AllocClientStatusFailed {
			stop.add(q)
			g.stopAlloc(q, "", StatusAllocReconnected, "")
		}
	}
	return g.reconnecting.minus(stop), stop
}

// liveReplacement follows a's NextAllocation chain within the group's
// allocs still under consideration, past replacements the server already
// stopped, and returns the position of the first one that is not
// server-terminal. It stops at a missing link or a loop.
func (g *groupRun) liveReplacement(a *structs.Allocation) (int, bool) {
	seen := map[string]bool{a.ID: true}
	for id := a.NextAllocation; id != "" && !seen[id]; {
		seen[id] = true
		q, ok := g.position(id)
		if !ok || !g.all.has(q) {
			return 0, false
		}
		next := g.allocs[q].alloc
		if !next.ServerTerminalStatus() {
			return q, true
		}
		id = next.NextAllocation
	}
	return 0, false
}

// pickReconnectingAlloc chooses between a reconnecting alloc and its
// replacement: the replacement if it runs a newer job version, or if it
// has a better placement score and is running (or the original is not);
// otherwise the original, which is preferred on ties.
func pickReconnectingAlloc(original, replacement *allocInfo) *allocInfo {
	if replacement.version > original.version || replacement.createIndex > original.createIndex {
		return replacement
	}
	os, rs := maxNormScore(original.alloc), maxNormScore(replacement.alloc)
	better := (os == nil && rs != nil) || (os != nil && rs != nil && rs.NormScore > os.NormScore)
	running := replacement.alloc.ClientStatus == structs.AllocClientStatusRunning
	originalNotRunning := original.alloc.ClientStatus != structs.AllocClientStatusRunning
	if better && (running || originalNotRunning) {
		return replacement
	}
	return original
}

// markReconnected records a reconnect update for each kept reconnecting
// alloc that is running, wanted and current: its "running" status is
// recorded as a transition so that later evaluations see it reconnected.
func (g *groupRun) markReconnected(reconnect allocSet) {
	r := g.r
	for p := range reconnect.ascending() {
		ai := g.allocs[p]
		a := ai.alloc
		if wantsTransition(a) || ai.version < r.job.Version || ai.createIndex < r.job.CreateIndex ||
			a.DesiredStatus != structs.AllocDesiredStatusRun || a.ClientStatus != structs.AllocClientStatusRunning {
			continue
		}
		c := a.Copy()
		c.AppendState(a.ClientStatus, r.in.Now)
		r.res.ReconnectUpdates[a.ID] = c
	}
}

// markDisconnecting turns every disconnecting alloc unknown, with a
// follow-up eval at its max_client_disconnect timeout (batched), when it
// will be considered lost. If a timeout is not in the future (a zero
// max_client_disconnect) nothing is marked, as in Nomad.
func (g *groupRun) markDisconnecting() {
	r := g.r
	var timeouts []delayedAlloc
	for p := range g.disconnecting.ascending() {
		at := g.allocs[p].disconnectTimeout(r.in.Now)
		if !at.After(r.in.Now) {
			return
		}
		timeouts = append(timeouts, delayedAlloc{pos: p, at: at})
	}
	ids := g.followups(timeouts, structs.EvalTriggerMaxDisconnectTimeout, FollowupDescDisconnectTimeout, true)
	for i, d := range timeouts {
		a := g.allocs[d.pos].alloc
		c := a.Copy()
		c.ClientStatus = structs.AllocClientStatusUnknown
		c.AppendState(structs.AllocClientStatusUnknown, r.in.Now)
		c.ClientDescription = StatusAllocUnknown
		c.FollowupEvalID = ids[i]
		r.res.DisconnectUpdates[a.ID] = c
	}
}

// stopAfterDelays returns the lost allocs whose group has
// stop_after_client_disconnect and whose node will stop them only in the
// future, with that time.
func (g *groupRun) stopAfterDelays(lost allocSet) []delayedAlloc {
	var later []delayedAlloc
	now := g.r.in.Now
	for p := range lost.ascending() {
		ai := g.allocs[p]
		if !ai.stopsAfterDisconnect() {
			continue
		}
		if at := ai.clientStopTime(now); at.After(now) {
			later = append(later, delayedAlloc{pos: p, at: at})
		}
	}
	return later
}
