package embedded

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	bolt "go.etcd.io/bbolt"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// UpsertNode implements storage.Store.
func (s *Store) UpsertNode(ctx context.Context, node *structs.Node) (*structs.Node, error) {
	var out *structs.Node
	_, err := s.write(ctx, func(w *wtx) error {
		b := w.tx.Bucket(bNodes)
		n := node.Copy()
		existing, err := getJSON[structs.Node](b, []byte(n.ID))
		if err != nil {
			return err
		}
		if n.Status == "" {
			n.Status = structs.NodeStatusReady
		}
		if existing != nil {
			n.CreateIndex = existing.CreateIndex
			n.SchedulingEligibility = existing.SchedulingEligibility
			n.Drain = existing.Drain
			n.DrainStrategy = existing.DrainStrategy
			n.Events = existing.Events
			n.ReactionsPending = existing.ReactionsPending
			if existing.Status != n.Status {
				n.ReactionsPending = w.index
			}
		} else {
			n.CreateIndex = w.index
			n.ReactionsPending = w.index
			if n.SchedulingEligibility == "" {
				n.SchedulingEligibility = structs.NodeSchedulingEligible
			}
		}
		n.ModifyIndex = w.index
		w.touch(storage.TableNodes)
		out = n
		return putJSON(b, []byte(n.ID), n)
	})
	if err != nil {
		return nil, fmt.Errorf("upsert node %s: %w", node.ID, err)
	}
	return out, nil
}

// UpdateNodeStatus implements storage.Store. A node written down loses
// its service registrations, as Nomad's.
func (s *Store) UpdateNodeStatus(ctx context.Context, nodeID, status string, at int64) (*structs.Node, error) {
	return s.changeNode(ctx, nodeID, func(w *wtx, n *structs.Node) (bool, error) {
		if n.Status == status {
			return false, nil
		}
		n.Status, n.StatusUpdatedAt, n.ReactionsPending = status, at, w.index
		if status == structs.NodeStatusDown {
			return true, w.deleteNodeServices(n.ID)
		}
		return true, nil
	})
}

// NodeReactionsDone implements storage.Store.
func (s *Store) NodeReactionsDone(ctx context.Context, nodeID string, index uint64) (*structs.Node, error) {
	out, err := s.changeNode(ctx, nodeID, func(_ *wtx, n *structs.Node) (bool, error) {
		if n.ReactionsPending == 0 || n.ReactionsPending != index {
			return false, nil
		}
		n.ReactionsPending = 0
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("clear pending reactions of node %s: %w", nodeID, err)
	}
	return out, nil
}

// changeNode is a read-modify-write of a node in one transaction: fn
// changes n (and may write more through w) and reports whether it changed
// anything; the node is written, at w's index, only then.
func (s *Store) changeNode(ctx context.Context, nodeID string, fn func(w *wtx, n *structs.Node) (bool, error)) (*structs.Node, error) {
	var out *structs.Node
	_, err := s.write(ctx, func(w *wtx) error {
		b := w.tx.Bucket(bNodes)
		n, err := getRequired[structs.Node](b, []byte(nodeID), func() error { return storage.NotFoundf("node %q", nodeID) })
		if err != nil {
			return err
		}
		out = n
		changed, err := fn(w, n)
		if err != nil || !changed {
			return err
		}
		n.ModifyIndex = w.index
		w.touch(storage.TableNodes)
		return putJSON(b, []byte(n.ID), n)
	})
	return out, err
}

// Node implements storage.Store.
func (s *Store) Node(ctx context.Context, id string) (*structs.Node, error) {
	var out *structs.Node
	err := s.read(ctx, func(tx *bolt.Tx) error {
		n, err := getRequired[structs.Node](tx.Bucket(bNodes), []byte(id), func() error { return storage.NotFoundf("node %q", id) })
		if err != nil {
			return err
		}
		out = n
		return nil
	})
	return out, err
}

// Nodes implements storage.Store from the node cache (the timers list
// every node each second).
func (s *Store) Nodes(ctx context.Context, prefix string) ([]*structs.Node, error) {
	var out []*structs.Node
	err := s.read(ctx, func(tx *bolt.Tx) error {
		nodes, err := s.allNodes(tx)
		if err != nil {
			return err
		}
		i := sort.Search(len(nodes), func(i int) bool { return nodes[i].ID >= prefix })
		for ; i < len(nodes) && strings.HasPrefix(nodes[i].ID, prefix); i++ {
			out = append(out, nodes[i])
		}
		return nil
	})
	return out, err
}

// NodeAssignmentIndex implements storage.Store.
func (s *Store) NodeAssignmentIndex(ctx context.Context, nodeID string) (uint64, error) {
	var idx uint64
	err := s.read(ctx, func(tx *bolt.Tx) error {
		idx = getUint(tx.Bucket(bNodeAssignment).Get([]byte(nodeID)))
		return nil
	})
	return idx, err
}

// UpdateNodeDrain implements storage.Store.
func (s *Store) UpdateNodeDrain(ctx context.Context, nodeID string, strategy *structs.DrainStrategy, markEligible bool, evals ...*structs.Evaluation) (*structs.Node, error) {
	return s.changeNode(ctx, nodeID, func(w *wtx, n *structs.Node) (bool, error) {
		if strategy != nil {
			d := *strategy
			n.Drain, n.DrainStrategy, n.SchedulingEligibility = true, &d, structs.NodeSchedulingIneligible
		} else {
			n.Drain, n.DrainStrategy = false, nil
			if markEligible {
				n.SchedulingEligibility = structs.NodeSchedulingEligible
			}
		}
		for _, e := range evals {
			if err := w.upsertEval(e.Copy()); err != nil {
				return false, err
			}
		}
		return true, nil
	})
}

// UpdateNodeEligibility implements storage.Store.
func (s *Store) UpdateNodeEligibility(ctx context.Context, nodeID, eligibility string) (*structs.Node, error) {
	return s.changeNode(ctx, nodeID, func(_ *wtx, n *structs.Node) (bool, error) {
		if n.SchedulingEligibility == eligibility {
			return false, nil
		}
		n.SchedulingEligibility = eligibility
		return true, nil
	})
}

// nodeCache holds the decoded nodes as of one nodes table index, so that
// evaluations do not decode every node each time: the list is valid while
// the index is unchanged (every node write moves it). Nodes in it are
// shared and never modified; writers store new copies.
type nodeCache struct {
	mu    sync.Mutex
	index uint64
	valid bool
	nodes []*structs.Node // sorted by ID
	byID  map[string]*structs.Node
}

// cachedNode returns node id from the cache when the cache holds the
// nodes as tx sees them (ok false: read the node from tx).
func (s *Store) cachedNode(tx *bolt.Tx, id string) (n *structs.Node, ok bool) {
	idx := getUint(tx.Bucket(bMeta).Get([]byte("table/" + storage.TableNodes)))
	c := &s.nodeCache
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.valid || c.index != idx {
		return nil, false
	}
	return c.byID[id], true
}

// allNodes returns every node as of tx, sorted by ID, from the cache when
// tx sees the nodes table at the cached index.
func (s *Store) allNodes(tx *bolt.Tx) ([]*structs.Node, error) {
	idx := getUint(tx.Bucket(bMeta).Get([]byte("table/" + storage.TableNodes)))
	c := &s.nodeCache
	c.mu.Lock()
	if c.valid && c.index == idx {
		nodes := c.nodes
		c.mu.Unlock()
		return nodes, nil
	}
	c.mu.Unlock()
	var nodes []*structs.Node
	cur := tx.Bucket(bNodes).Cursor()
	for k, v := cur.First(); k != nil; k, v = cur.Next() {
		n, err := decodeInto[structs.Node](v)
		if err != nil {
			return nil, err
		}
		nodes = append(nodes, n)
	}
	c.mu.Lock()
	if !c.valid || idx > c.index {
		byID := make(map[string]*structs.Node, len(nodes))
		for _, n := range nodes {
			byID[n.ID] = n
		}
		c.index, c.nodes, c.byID, c.valid = idx, nodes, byID, true
	}
	c.mu.Unlock()
	return nodes, nil
}

// withUsage pairs each node with its usage record as of tx.
func withUsage(tx *bolt.Tx, nodes []*structs.Node) ([]*storage.NodeUsage, error) {
	b := tx.Bucket(bNodeUsage)
	out := make([]*storage.NodeUsage, len(nodes))
	for i, n := range nodes {
		u, err := decodeUsage(b.Get([]byte(n.ID)))
		if err != nil {
			return nil, fmt.Errorf("usage of node %s: %w", n.ID, err)
		}
		out[i] = &storage.NodeUsage{Node: n, Used: u.res, Allocs: int(u.allocs), Ports: u.ports}
	}
	return out, nil
}

// CandidateNodes implements storage.Store: the nodes come from the node
// cache, the usage from the usage records, in one read transaction.
func (s *Store) CandidateNodes(ctx context.Context, q storage.NodeQuery) ([]*storage.NodeUsage, error) {
	var out []*storage.NodeUsage
	err := s.read(ctx, func(tx *bolt.Tx) error {
		nodes, err := s.allNodes(tx)
		if err != nil {
			return err
		}
		include := make(map[string]bool, len(q.Include))
		for _, id := range q.Include {
			include[id] = true
		}
		picked := make([]*structs.Node, 0, len(nodes))
		for _, n := range nodes {
			if include[n.ID] || q.Candidate(n) {
				picked = append(picked, n)
			}
		}
		out, err = withUsage(tx, picked)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read candidate nodes: %w", err)
	}
	return out, nil
}

// NodesWithUsage implements storage.Store (copies: callers may change
// them).
func (s *Store) NodesWithUsage(ctx context.Context) ([]*storage.NodeUsage, error) {
	var out []*storage.NodeUsage
	err := s.read(ctx, func(tx *bolt.Tx) error {
		nodes, err := s.allNodes(tx)
		if err != nil {
			return err
		}
		copies := make([]*structs.Node, len(nodes))
		for i, n := range nodes {
			copies[i] = n.Copy()
		}
		out, err = withUsage(tx, copies)
		return err
	})
	return out, err
}
