package dynamodb

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// Defaults of NodeCacheConfig.
const (
	// DefaultNodeCacheMaxAge bounds how long usage read by a full load is
	// trusted (usage changed by other processes' plans and client reports
	// is seen at the next load; the commit re-checks capacity meanwhile).
	DefaultNodeCacheMaxAge = 30 * time.Second
)

// NodeCacheConfig tunes a NodeCache.
type NodeCacheConfig struct {
	// MaxAge is how long a full load of the nodes serves evaluations
	// while the nodes table index does not move (default
	// DefaultNodeCacheMaxAge).
	MaxAge time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// NodeCache is the store as an evaluator reads it when one process runs
// many evaluations (a warm evaluate Lambda container): CandidateNodes is
// served from the nodes and usage counters of the last full load, so an
// evaluation's read cost does not grow with the fleet. Every other method
// is the Store's.
//
// The cache is validated, on every CandidateNodes, by the nodes table
// index (8 index shard items, 8 strongly consistent read units: every
// node registration, status, drain and eligibility change moves it) and
// by MaxAge; either makes it load every node again (1 read unit per node,
// strongly consistent, plus the gsi1 listing). Nodes a query includes
// that the load lacks (a node registered since) are read by key and kept.
//
// Usage between loads comes from this process's own commits: CommitPlan
// keeps the node records the commit read (strongly consistent, at commit
// time) with the plan's change applied, and after a refused plan the
// records it read, so a re-evaluation after a conflict sees the nodes it
// lost on as they are. Usage another process changed meanwhile is stale
// until the next load, and that is safe (storage.Store.CandidateNodes):
// usage too low makes the commit's capacity condition refuse the plan (a
// conflict, and the evaluator re-evaluates); usage too high can only make
// a placement fail, and the first plan that would block an evaluation is
// refused with a conflict after a fresh load, so the evaluation blocks
// only on usage read after its own last attempt began: it never waits for
// capacity freed before then (whose unblocking found no blocked eval to
// wake). The chaos suite found that a time bound (usage loaded within
// 2 s) was not enough: a report freeing room inside that window was lost.
//
// It is safe for concurrent use; callers must not modify the nodes it
// returns.
type NodeCache struct {
	*Store
	cfg NodeCacheConfig

	loadMu sync.Mutex // one full load at a time

	mu       sync.Mutex
	reloaded map[string]bool        // eval IDs whose blocking plan made a fresh load
	recs     map[string]*nodeRecord // node ID → node and usage
	ids      []string               // the keys of recs, ascending (nil: to sort)
	index    uint64                 // the nodes table index read before the load
	loadedAt time.Time              // zero: never loaded
	loads    int
}

// NewNodeCache returns a node cache over s.
func NewNodeCache(s *Store, cfg NodeCacheConfig) *NodeCache {
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = DefaultNodeCacheMaxAge
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &NodeCache{Store: s, cfg: cfg, reloaded: map[string]bool{}}
}

// Loads returns how many full loads of the nodes the cache has made.
func (c *NodeCache) Loads() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.loads
}

// CandidateNodes implements storage.Store from the cache (see NodeCache).
func (c *NodeCache) CandidateNodes(ctx context.Context, q storage.NodeQuery) ([]*storage.NodeUsage, error) {
	idx, err := c.Index(ctx, storage.TableNodes)
	if err != nil {
		return nil, fmt.Errorf("read candidate nodes: nodes table index: %w", err)
	}
	c.mu.Lock()
	stale := c.loadedAt.IsZero() || c.index != idx || c.cfg.Now().Sub(c.loadedAt) > c.cfg.MaxAge
	c.mu.Unlock()
	if stale {
		if err := c.load(ctx, idx, false); err != nil {
			return nil, fmt.Errorf("read candidate nodes: %w", err)
		}
	}
	var missing []item
	c.mu.Lock()
	for _, id := range q.Include {
		if c.recs[id] == nil {
			missing = append(missing, key(nodePK(id), skMeta))
		}
	}
	c.mu.Unlock()
	if len(missing) > 0 {
		items, err := c.batchGet(ctx, missing)
		if err != nil {
			return nil, fmt.Errorf("read candidate nodes: %w", err)
		}
		got := make(map[string]*nodeRecord, len(items))
		for _, it := range items {
			if getS(it, "SK") != skMeta || c.valueless(strings.TrimPrefix(getS(it, "PK"), "NODE#"), it) {
				continue
			}
			r, err := decodeNode(it)
			if err != nil {
				return nil, fmt.Errorf("read candidate nodes: %w", err)
			}
			got[r.node.ID] = r
		}
		c.keep(got)
	}
	include := make(map[string]bool, len(q.Include))
	for _, id := range q.Include {
		include[id] = true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ids == nil {
		c.ids = make([]string, 0, len(c.recs))
		for id := range c.recs {
			c.ids = append(c.ids, id)
		}
		sort.Strings(c.ids)
	}
	var out []*storage.NodeUsage
	for _, id := range c.ids {
		r := c.recs[id]
		if include[id] || q.Candidate(r.node) {
			out = append(out, &storage.NodeUsage{Node: r.node, Used: r.used, Allocs: int(r.allocs), Ports: r.ports})
		}
	}
	return out, nil
}

// load reads every node and replaces the cache with them. Unless force,
// a load another evaluation finished while this one waited for it serves.
func (c *NodeCache) load(ctx context.Context, idx uint64, force bool) error {
	c.loadMu.Lock()
	defer c.loadMu.Unlock()
	if !force {
		c.mu.Lock()
		done := !c.loadedAt.IsZero() && c.index >= idx && c.cfg.Now().Sub(c.loadedAt) <= c.cfg.MaxAge
		c.mu.Unlock()
		if done {
			return nil
		}
	}
	at := c.cfg.Now()
	recs, err := c.nodeRecords(ctx, "")
	if err != nil {
		return err
	}
	m := make(map[string]*nodeRecord, len(recs))
	ids := make([]string, len(recs))
	for i, r := range recs {
		m[r.node.ID] = r
		ids[i] = r.node.ID
	}
	c.mu.Lock()
	c.recs, c.ids, c.index, c.loadedAt = m, ids, idx, at
	c.loads++
	c.mu.Unlock()
	return nil
}

// keep puts records read from the table into the cache.
func (c *NodeCache) keep(recs map[string]*nodeRecord) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.recs == nil {
		return // never loaded: the first CandidateNodes loads everything
	}
	for id, r := range recs {
		if _, ok := c.recs[id]; !ok {
			c.ids = nil
		}
		c.recs[id] = r
	}
}

// CommitPlan implements storage.Store: the Store's commit, whose node
// reads refresh the cache (see NodeCache). The first plan of an
// evaluation that would block it is refused after a fresh load; the
// evaluator's next attempt computes from that load, and its plan commits.
func (c *NodeCache) CommitPlan(ctx context.Context, plan *structs.Plan) (uint64, error) {
	c.mu.Lock()
	again := c.reloaded[plan.EvalID]
	delete(c.reloaded, plan.EvalID)
	c.mu.Unlock()
	if blocksEval(plan) && !again {
		idx, err := c.Index(ctx, storage.TableNodes)
		if err == nil {
			err = c.load(ctx, idx, true)
		}
		if err != nil {
			return 0, fmt.Errorf("commit plan for eval %s: reload nodes: %w", plan.EvalID, err)
		}
		c.mu.Lock()
		c.reloaded[plan.EvalID] = true
		c.mu.Unlock()
		return 0, fmt.Errorf("commit plan for eval %s: %w", plan.EvalID,
			storage.Conflictf("placements failed on node usage read from a cache; nodes read again"))
	}
	var seen planNodes
	idx, err := c.commitPlan(ctx, plan, &seen)
	c.keep(seen.nodes)
	if err != nil {
		return 0, fmt.Errorf("commit plan for eval %s: %w", plan.EvalID, err)
	}
	return idx, nil
}

// blocksEval reports whether plan leaves its evaluation waiting for
// capacity: it writes a blocked evaluation.
func blocksEval(plan *structs.Plan) bool {
	for _, e := range plan.Evals {
		if e.Status == structs.EvalStatusBlocked {
			return true
		}
	}
	return false
}
