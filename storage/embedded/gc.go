package embedded

import (
	"bytes"
	"context"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// GarbageCollect implements storage.Store in one write transaction.
func (s *Store) GarbageCollect(ctx context.Context, olderThan time.Time) (*storage.GCResult, error) {
	res := &storage.GCResult{}
	_, err := s.write(ctx, func(w *wtx) error {
		*res = storage.GCResult{}
		gc := &collector{w: w, cutoff: olderThan.UnixNano(), res: res, nodes: map[string]bool{}}
		return gc.run()
	})
	if err != nil {
		return nil, fmt.Errorf("garbage collect: %w", err)
	}
	return res, nil
}

type collector struct {
	w      *wtx
	cutoff int64
	res    *storage.GCResult
	nodes  map[string]bool // nodes that lost allocs: their agents must notice
}

func (gc *collector) run() error {
	if err := gc.jobs(); err != nil {
		return err
	}
	if err := gc.allocs(); err != nil {
		return err
	}
	if err := gc.evals(); err != nil {
		return err
	}
	if err := gc.deployments(); err != nil {
		return err
	}
	if err := gc.orphanVersions(); err != nil {
		return err
	}
	if err := gc.downNodes(); err != nil {
		return err
	}
	na := gc.w.tx.Bucket(bNodeAssignment)
	for n := range gc.nodes {
		if err := na.Put([]byte(n), putUint(gc.w.index)); err != nil {
			return err
		}
	}
	return nil
}

// finished reports whether an alloc will never run again on its node: the
// node finished it, or the server stopped it before the node (now down or
// gone) ever started it.
func (gc *collector) finished(a *structs.Allocation) bool {
	if a.ClientTerminalStatus() {
		return true
	}
	if !a.ServerTerminalStatus() || a.ClientStatus != structs.AllocClientStatusPending {
		return false
	}
	n, _ := getJSON[structs.Node](gc.w.tx.Bucket(bNodes), []byte(a.NodeID))
	return n == nil || n.Status == structs.NodeStatusDown
}

// jobs removes dead jobs that are stopped or batch, with everything of
// theirs, once their last activity is older than the cutoff.
func (gc *collector) jobs() error {
	var doomed []*structs.Job
	c := gc.w.tx.Bucket(bJobs).Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		j, err := decodeJob(v)
		if err != nil {
			return err
		}
		// A periodic or parameterized parent is kept until stopped, as
		// Nomad (it reports such a job running): it has no allocs to go by.
		if !j.Stop && (j.Type != structs.JobTypeBatch || j.IsParent()) {
			continue
		}
		ok, err := gc.jobFinished(j)
		if err != nil {
			return err
		}
		if ok {
			doomed = append(doomed, j)
		}
	}
	for _, j := range doomed {
		if err := gc.deleteJob(j); err != nil {
			return err
		}
		gc.res.Jobs++
	}
	return nil
}

// jobFinished reports whether all of a job's allocs are finished and all
// its evals terminal, and nothing of it changed since the cutoff.
func (gc *collector) jobFinished(j *structs.Job) (bool, error) {
	if j.SubmitTime >= gc.cutoff {
		return false, nil
	}
	ok := true
	err := scanIndex(gc.w.tx.Bucket(bAllocsByJob), prefixKey(j.Namespace, j.ID), func(id string) error {
		a, err := getAlloc(gc.w.tx, id)
		if err != nil || a == nil {
			return err
		}
		if !gc.finished(a) || a.ModifyTime >= gc.cutoff {
			ok = false
			return errStop
		}
		return nil
	})
	if err != nil && err != errStop {
		return false, err
	}
	if !ok {
		return false, nil
	}
	evals := gc.w.tx.Bucket(bEvals)
	err = scanIndex(gc.w.tx.Bucket(bEvalsByJob), prefixKey(j.Namespace, j.ID), func(id string) error {
		e, err := getJSON[structs.Evaluation](evals, []byte(id))
		if err != nil || e == nil {
			return err
		}
		if !e.TerminalStatus() || e.ModifyTime >= gc.cutoff {
			ok = false
			return errStop
		}
		return nil
	})
	if err != nil && err != errStop {
		return false, err
	}
	return ok, nil
}

func (gc *collector) deleteJob(j *structs.Job) error {
	tx := gc.w.tx
	var allocIDs, evalIDs, depIDs []string
	collect := func(bucket []byte, into *[]string) error {
		return scanIndex(tx.Bucket(bucket), prefixKey(j.Namespace, j.ID), func(id string) error {
			*into = append(*into, id)
			return nil
		})
	}
	if err := collect(bAllocsByJob, &allocIDs); err != nil {
		return err
	}
	if err := collect(bEvalsByJob, &evalIDs); err != nil {
		return err
	}
	if err := collect(bDeploysByJob, &depIDs); err != nil {
		return err
	}
	for _, id := range allocIDs {
		if err := gc.deleteAlloc(id); err != nil {
			return err
		}
	}
	for _, id := range evalIDs {
		if err := gc.deleteEval(id); err != nil {
			return err
		}
	}
	for _, id := range depIDs {
		if err := gc.deleteDeployment(id); err != nil {
			return err
		}
	}
	if err := deletePrefix(tx.Bucket(bJobVersions), prefixKey(j.Namespace, j.ID)); err != nil {
		return err
	}
	if err := deletePrefix(tx.Bucket(bSubmissions), prefixKey(j.Namespace, j.ID)); err != nil {
		return err
	}
	gc.w.touch(storage.TableJobs)
	if err := tx.Bucket(bJobsByType).Delete(key(j.Type, j.Namespace, j.ID)); err != nil {
		return err
	}
	return tx.Bucket(bJobs).Delete(key(j.Namespace, j.ID))
}

// allocs removes finished allocs older than the cutoff that nothing will
// act on again: stopped by the server, replaced, or of a job that is
// stopped or gone. (A failed alloc still wanted may yet be rescheduled; a
// completed batch alloc of a live job stands for work done.) Only the
// allocs in allocs_terminal are read: live ones cannot be finished.
func (gc *collector) allocs() error {
	var doomed []string
	jobs := gc.w.tx.Bucket(bJobs)
	c := gc.w.tx.Bucket(bAllocsTerminal).Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		a, err := getAlloc(gc.w.tx, string(k))
		if err != nil {
			return err
		}
		if a == nil || a.ModifyTime >= gc.cutoff || !gc.finished(a) {
			continue
		}
		done := a.ServerTerminalStatus() || a.NextAllocation != ""
		if !done {
			j, err := getJSON[structs.Job](jobs, key(a.Namespace, a.JobID))
			if err != nil {
				return err
			}
			done = j == nil || j.Stop
		}
		if done {
			doomed = append(doomed, a.ID)
		}
	}
	for _, id := range doomed {
		if err := gc.deleteAlloc(id); err != nil {
			return err
		}
	}
	return nil
}

func (gc *collector) deleteAlloc(id string) error {
	tx := gc.w.tx
	a, err := getAlloc(tx, id)
	if err != nil || a == nil {
		return err
	}
	if err := gc.w.moveUsage(holdingOf(a), holding{}); err != nil {
		return err
	}
	if err := gc.w.deleteAllocServices(a.ID); err != nil {
		return err
	}
	for _, del := range []struct {
		b []byte
		k []byte
	}{
		{bAllocs, []byte(a.ID)},
		{bAllocsByJob, key(a.Namespace, a.JobID, a.ID)},
		{bAllocsByNode, key(a.NodeID, a.ID)},
		{bAllocsByEval, key(a.EvalID, a.ID)},
		{bAllocsTerminal, []byte(a.ID)},
	} {
		if err := tx.Bucket(del.b).Delete(del.k); err != nil {
			return err
		}
	}
	gc.nodes[a.NodeID] = true
	gc.w.touch(storage.TableAllocs)
	gc.w.touchJob(a.Namespace, a.JobID)
	gc.res.Allocs++
	return nil
}

// evals removes terminal evals older than the cutoff that no remaining
// alloc was placed by.
func (gc *collector) evals() error {
	var doomed []string
	byEval := gc.w.tx.Bucket(bAllocsByEval)
	c := gc.w.tx.Bucket(bEvals).Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		e, err := decodeInto[structs.Evaluation](v)
		if err != nil {
			return err
		}
		if !e.TerminalStatus() || e.ModifyTime >= gc.cutoff {
			continue
		}
		prefix := prefixKey(e.ID)
		if k2, _ := byEval.Cursor().Seek(prefix); k2 != nil && bytes.HasPrefix(k2, prefix) {
			continue
		}
		doomed = append(doomed, e.ID)
	}
	for _, id := range doomed {
		if err := gc.deleteEval(id); err != nil {
			return err
		}
	}
	return nil
}

func (gc *collector) deleteEval(id string) error {
	tx := gc.w.tx
	e, err := getJSON[structs.Evaluation](tx.Bucket(bEvals), []byte(id))
	if err != nil || e == nil {
		return err
	}
	if err := tx.Bucket(bEvals).Delete([]byte(id)); err != nil {
		return err
	}
	if err := tx.Bucket(bEvalsByJob).Delete(key(e.Namespace, e.JobID, e.ID)); err != nil {
		return err
	}
	if err := tx.Bucket(bEvalsByStatus).Delete(key(e.Status, e.ID)); err != nil {
		return err
	}
	gc.w.touch(storage.TableEvals)
	gc.res.Evals++
	return nil
}

// deployments removes terminal deployments older than the cutoff, except
// each job's latest, which the reconciler reads.
func (gc *collector) deployments() error {
	var doomed []string
	c := gc.w.tx.Bucket(bDeployments).Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		d, err := decodeInto[structs.Deployment](v)
		if err != nil {
			return err
		}
		if d.Active() || d.ModifyTime >= gc.cutoff {
			continue
		}
		latest, err := latestDeployment(gc.w.tx, d.Namespace, d.JobID)
		if err != nil {
			return err
		}
		if latest != nil && latest.ID == d.ID {
			j, err := getJSON[structs.Job](gc.w.tx.Bucket(bJobs), key(d.Namespace, d.JobID))
			if err != nil {
				return err
			}
			if j != nil {
				continue
			}
		}
		doomed = append(doomed, d.ID)
	}
	for _, id := range doomed {
		if err := gc.deleteDeployment(id); err != nil {
			return err
		}
	}
	return nil
}

func (gc *collector) deleteDeployment(id string) error {
	tx := gc.w.tx
	d, err := getJSON[structs.Deployment](tx.Bucket(bDeployments), []byte(id))
	if err != nil || d == nil {
		return err
	}
	if err := tx.Bucket(bDeployments).Delete([]byte(id)); err != nil {
		return err
	}
	if err := tx.Bucket(bDeploysByJob).Delete(key(d.Namespace, d.JobID, d.ID)); err != nil {
		return err
	}
	if err := tx.Bucket(bDeploysActive).Delete([]byte(d.ID)); err != nil {
		return err
	}
	gc.w.touch(storage.TableDeployments)
	gc.res.Deployments++
	return nil
}

// orphanVersions removes the versions of purged jobs once no alloc runs
// them.
func (gc *collector) orphanVersions() error {
	tx := gc.w.tx
	var doomed [][]byte
	c := tx.Bucket(bJobVersions).Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		j, err := decodeJob(v)
		if err != nil {
			return err
		}
		if head, err := getJSON[structs.Job](tx.Bucket(bJobs), key(j.Namespace, j.ID)); err != nil || head != nil {
			continue
		}
		prefix := prefixKey(j.Namespace, j.ID)
		if k2, _ := tx.Bucket(bAllocsByJob).Cursor().Seek(prefix); k2 != nil && bytes.HasPrefix(k2, prefix) {
			continue
		}
		doomed = append(doomed, append([]byte(nil), k...))
	}
	for _, k := range doomed {
		if err := tx.Bucket(bJobVersions).Delete(k); err != nil {
			return err
		}
		if err := tx.Bucket(bSubmissions).Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// downNodes removes nodes down since before the cutoff that hold no alloc.
func (gc *collector) downNodes() error {
	tx := gc.w.tx
	var doomed []string
	c := tx.Bucket(bNodes).Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		n, err := decodeInto[structs.Node](v)
		if err != nil {
			return err
		}
		if n.Status != structs.NodeStatusDown || time.Unix(n.StatusUpdatedAt, 0).UnixNano() >= gc.cutoff {
			continue
		}
		prefix := prefixKey(n.ID)
		if k2, _ := tx.Bucket(bAllocsByNode).Cursor().Seek(prefix); k2 != nil && bytes.HasPrefix(k2, prefix) {
			continue
		}
		doomed = append(doomed, n.ID)
	}
	for _, id := range doomed {
		if err := tx.Bucket(bNodes).Delete([]byte(id)); err != nil {
			return err
		}
		if err := tx.Bucket(bNodeAssignment).Delete([]byte(id)); err != nil {
			return err
		}
		if err := tx.Bucket(bNodeUsage).Delete([]byte(id)); err != nil {
			return err
		}
		delete(gc.w.usage, id)
		delete(gc.nodes, id)
		gc.w.touch(storage.TableNodes)
		gc.res.Nodes++
	}
	return nil
}

func deletePrefix(b *bolt.Bucket, prefix []byte) error {
	var keys [][]byte
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		keys = append(keys, append([]byte(nil), k...))
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}
