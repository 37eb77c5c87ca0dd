package dynamodb

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
	"go.uber.org/zap"
)

// nodeRecord is a decoded node item: the node and its usage counters.
type nodeRecord struct {
	node   *structs.Node
	mi     uint64
	used   structs.ComparableResources
	allocs int64
	// ports are the host ports held on the node (its hp_<port>
	// attributes), ascending.
	ports []int
}

// hostPortAttr is the node item's attribute that says host port p is held
// by a live alloc of the node: one top-level attribute per port, valued 1
// (see README.md, "Host ports").
func hostPortAttr(p int) string { return hostPortPrefix + strconv.Itoa(p) }

const hostPortPrefix = "hp_"

func decodeNode(it item) (*nodeRecord, error) {
	n, err := decode[structs.Node](getB(it, "v"))
	if err != nil {
		return nil, err
	}
	rec := &nodeRecord{node: n, mi: getU(it, "mi"), allocs: getN(it, "nAllocs"),
		used: structs.ComparableResources{CPU: getN(it, "useCpu"), MemoryMB: getN(it, "useMem"), DiskMB: getN(it, "useDisk")}}
	for k := range it {
		if digits, ok := strings.CutPrefix(k, hostPortPrefix); ok {
			p, err := strconv.Atoi(digits)
			if err != nil {
				return nil, fmt.Errorf("node %s: attribute %q does not name a host port", n.ID, k)
			}
			rec.ports = append(rec.ports, p)
		}
	}
	sort.Ints(rec.ports)
	return rec, nil
}

func (s *Store) readNode(ctx context.Context, id string) (*nodeRecord, error) {
	it, err := s.get(ctx, nodePK(id), skMeta, true)
	if err != nil || it == nil || s.valueless(id, it) {
		return nil, err
	}
	return decodeNode(it)
}

// valueless reports (and logs) an item of a node's partition without a
// value `v`. The node agent's policy lets it write its heartbeat attributes
// to any item of its own partition, so an item holding only those may
// exist where drover's items live; such items are ignored, never decoded.
func (s *Store) valueless(nodeID string, it item) bool {
	if has(it, "v") {
		return false
	}
	s.log.Warn("ignoring an item without a value in a node's partition (written by its node agent?)",
		zap.String("node_id", nodeID), zap.String("sk", getS(it, "SK")))
	return true
}

// nodeAction is the write of n over rec (nil: a new node), keeping the
// usage counters: free capacity is recomputed from the usage read, and the
// write is guarded by the modify index and that usage, so a plan landing
// in between makes it retry.
func (s *Store) nodeAction(n *structs.Node, rec *nodeRecord) action {
	var used structs.ComparableResources
	if rec != nil {
		used = rec.used
	}
	capacity := n.Capacity()
	free := capacity.Sub(used)
	vals := item{":v": avB(encode(n)), ":mi": avU(n.ModifyIndex), ":ci": avU(n.CreateIndex), ":rdy": avBool(n.Ready()),
		":cc": avN(capacity.CPU), ":cm": avN(capacity.MemoryMB), ":cd": avN(capacity.DiskMB),
		":fc": avN(free.CPU), ":fm": avN(free.MemoryMB), ":fd": avN(free.DiskMB),
		":g1pk": avS("NODE"), ":g1sk": avS(n.ID)}
	cond := "attribute_not_exists(mi)"
	expr := "SET v = :v, mi = :mi, ci = :ci, rdy = :rdy, capCpu = :cc, capMem = :cm, capDisk = :cd, freeCpu = :fc, freeMem = :fm, freeDisk = :fd, g1pk = :g1pk, g1sk = :g1sk"
	if rec != nil {
		cond = "mi = :pmi AND useCpu = :uc AND useMem = :um AND useDisk = :ud"
		vals[":pmi"], vals[":uc"], vals[":um"], vals[":ud"] = avU(rec.mi), avN(used.CPU), avN(used.MemoryMB), avN(used.DiskMB)
	} else {
		expr += ", useCpu = :z, useMem = :z, useDisk = :z, nAllocs = :z"
		vals[":z"] = avN(0)
	}
	return s.update(key(nodePK(n.ID), skMeta), expr, cond, nil, vals, fmt.Sprintf("node %s changed concurrently", n.ID))
}

// writeNode writes n over rec, with evals, in one transaction.
func (s *Store) writeNode(ctx context.Context, n *structs.Node, rec *nodeRecord, evals ...*structs.Evaluation) error {
	u := newUnit()
	u.acts = append(u.acts, s.nodeAction(n, rec))
	if err := s.addEvals(ctx, u, n.ModifyIndex, evals); err != nil {
		return err
	}
	if err := s.transact(ctx, s.render(u)); err != nil {
		return raceOnConflict(err)
	}
	return nil
}

// UpsertNode implements storage.Store.
func (s *Store) UpsertNode(ctx context.Context, node *structs.Node) (*structs.Node, error) {
	out, err := withConflictRetry(ctx, s, func() (*structs.Node, error) {
		rec, err := s.readNode(ctx, node.ID)
		if err != nil {
			return nil, err
		}
		idx := s.nextIndex()
		n := node.Copy()
		if n.Status == "" {
			n.Status = structs.NodeStatusReady
		}
		if rec != nil {
			n.CreateIndex = rec.node.CreateIndex
			n.SchedulingEligibility = rec.node.SchedulingEligibility
			n.Drain = rec.node.Drain
			n.DrainStrategy = rec.node.DrainStrategy
			n.Events = rec.node.Events
			n.ReactionsPending = rec.node.ReactionsPending
			if rec.node.Status != n.Status {
				n.ReactionsPending = idx
			}
		} else {
			n.CreateIndex = idx
			n.ReactionsPending = idx
			if n.SchedulingEligibility == "" {
				n.SchedulingEligibility = structs.NodeSchedulingEligible
			}
		}
		n.ModifyIndex = idx
		if err := s.writeNode(ctx, n, rec); err != nil {
			return nil, err
		}
		if err := s.bumpTables(ctx, idx, storage.TableNodes); err != nil {
			return nil, err
		}
		return n, nil
	})
	if err != nil {
		return nil, fmt.Errorf("upsert node %s: %w", node.ID, err)
	}
	return out, nil
}

// UpdateNodeStatus implements storage.Store.
func (s *Store) UpdateNodeStatus(ctx context.Context, nodeID, status string, at int64) (*structs.Node, error) {
	out, err := s.changeNode(ctx, nodeID, func(n *structs.Node, idx uint64) bool {
		if n.Status == status {
			return false
		}
		n.Status, n.StatusUpdatedAt, n.ReactionsPending = status, at, idx
		return true
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("update status of node %s: %w", nodeID, err)
	}
	return out, nil
}

// NodeReactionsDone implements storage.Store.
func (s *Store) NodeReactionsDone(ctx context.Context, nodeID string, index uint64) (*structs.Node, error) {
	out, err := s.changeNode(ctx, nodeID, func(n *structs.Node, _ uint64) bool {
		if n.ReactionsPending == 0 || n.ReactionsPending != index {
			return false
		}
		n.ReactionsPending = 0
		return true
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("clear pending reactions of node %s: %w", nodeID, err)
	}
	return out, nil
}

// Node implements storage.Store.
func (s *Store) Node(ctx context.Context, id string) (*structs.Node, error) {
	rec, err := s.readNode(ctx, id)
	if err != nil {
		return nil, err
	}
	if rec == nil {
		return nil, storage.NotFoundf("node %q", id)
	}
	return rec.node, nil
}

func (s *Store) nodeRecords(ctx context.Context, prefix string) ([]*nodeRecord, error) {
	keys, err := s.queryIndex(ctx, GSI1, "g1pk", "g1sk", "NODE", prefix)
	if err != nil {
		return nil, err
	}
	items, err := s.batchGet(ctx, keys)
	if err != nil {
		return nil, err
	}
	out := make([]*nodeRecord, 0, len(items))
	for _, it := range items {
		if s.valueless(strings.TrimPrefix(getS(it, "PK"), "NODE#"), it) {
			continue
		}
		rec, err := decodeNode(it)
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].node.ID < out[j].node.ID })
	return out, nil
}

// Nodes implements storage.Store.
func (s *Store) Nodes(ctx context.Context, prefix string) ([]*structs.Node, error) {
	recs, err := s.nodeRecords(ctx, prefix)
	if err != nil {
		return nil, err
	}
	out := make([]*structs.Node, len(recs))
	for i, r := range recs {
		out[i] = r.node
	}
	return out, nil
}

// NodesWithUsage implements storage.Store: usage comes from the counters
// plan and report transactions keep on each node item.
func (s *Store) NodesWithUsage(ctx context.Context) ([]*storage.NodeUsage, error) {
	recs, err := s.nodeRecords(ctx, "")
	if err != nil {
		return nil, err
	}
	out := make([]*storage.NodeUsage, len(recs))
	for i, r := range recs {
		out[i] = &storage.NodeUsage{Node: r.node, Used: r.used, Allocs: int(r.allocs), Ports: r.ports}
	}
	return out, nil
}

// NodeAssignmentIndex implements storage.Store.
func (s *Store) NodeAssignmentIndex(ctx context.Context, nodeID string) (uint64, error) {
	it, err := s.get(ctx, nodePK(nodeID), skIdx, true)
	if err != nil {
		return 0, err
	}
	return getU(it, "idx"), nil
}

// changeNode is a read-modify-write of a node, with evals written in the
// same transaction: fn changes n (idx: the write's index) and reports
// whether it changed anything; without a change and without evals nothing
// is written and the node is returned as read.
func (s *Store) changeNode(ctx context.Context, nodeID string, fn func(n *structs.Node, idx uint64) bool, evals []*structs.Evaluation) (*structs.Node, error) {
	return withConflictRetry(ctx, s, func() (*structs.Node, error) {
		rec, err := s.readNode(ctx, nodeID)
		if err != nil {
			return nil, err
		}
		if rec == nil {
			return nil, storage.NotFoundf("node %q", nodeID)
		}
		n := rec.node.Copy()
		idx := s.nextIndex()
		if !fn(n, idx) && len(evals) == 0 {
			return rec.node, nil
		}
		n.ModifyIndex = idx
		if err := s.writeNode(ctx, n, rec, evals...); err != nil {
			return nil, err
		}
		tables := []string{storage.TableNodes}
		if len(evals) > 0 {
			tables = append(tables, storage.TableEvals)
		}
		return n, s.bumpTables(ctx, idx, tables...)
	})
}

// UpdateNodeDrain implements storage.Store.
func (s *Store) UpdateNodeDrain(ctx context.Context, nodeID string, strategy *structs.DrainStrategy, markEligible bool, evals ...*structs.Evaluation) (*structs.Node, error) {
	return s.changeNode(ctx, nodeID, func(n *structs.Node, _ uint64) bool {
		if strategy != nil {
			d := *strategy
			n.Drain, n.DrainStrategy, n.SchedulingEligibility = true, &d, structs.NodeSchedulingIneligible
		} else {
			n.Drain, n.DrainStrategy = false, nil
			if markEligible {
				n.SchedulingEligibility = structs.NodeSchedulingEligible
			}
		}
		return true
	}, evals)
}

// UpdateNodeEligibility implements storage.Store.
func (s *Store) UpdateNodeEligibility(ctx context.Context, nodeID, eligibility string) (*structs.Node, error) {
	return s.changeNode(ctx, nodeID, func(n *structs.Node, _ uint64) bool {
		if n.SchedulingEligibility == eligibility {
			return false
		}
		n.SchedulingEligibility = eligibility
		return true
	}, nil)
}

// CandidateNodes implements storage.Store: today it reads every node item
// (usage from the counters plan and report transactions keep on it) and
// keeps those q selects; the nodes q names that the listing lacks are read
// by key.
func (s *Store) CandidateNodes(ctx context.Context, q storage.NodeQuery) ([]*storage.NodeUsage, error) {
	recs, err := s.nodeRecords(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("read candidate nodes: %w", err)
	}
	include := make(map[string]bool, len(q.Include))
	for _, id := range q.Include {
		include[id] = true
	}
	out := make([]*storage.NodeUsage, 0, len(recs))
	for _, r := range recs {
		if include[r.node.ID] || q.Candidate(r.node) {
			out = append(out, &storage.NodeUsage{Node: r.node, Used: r.used, Allocs: int(r.allocs), Ports: r.ports})
			delete(include, r.node.ID)
		}
	}
	// The listing comes from gsi1, eventually consistent: a node that has
	// just registered may be missing from it. The nodes the query names
	// (the node of a node-update evaluation, the nodes of the job's
	// allocs) are read from the table itself.
	if len(include) > 0 {
		keys := make([]item, 0, len(include))
		for id := range include {
			keys = append(keys, key(nodePK(id), skMeta))
		}
		items, err := s.batchGet(ctx, keys)
		if err != nil {
			return nil, fmt.Errorf("read candidate nodes: %w", err)
		}
		for _, it := range items {
			if getS(it, "SK") != skMeta || s.valueless(strings.TrimPrefix(getS(it, "PK"), "NODE#"), it) {
				continue
			}
			r, err := decodeNode(it)
			if err != nil {
				return nil, fmt.Errorf("read candidate nodes: %w", err)
			}
			out = append(out, &storage.NodeUsage{Node: r.node, Used: r.used, Allocs: int(r.allocs), Ports: r.ports})
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Node.ID < out[j].Node.ID })
	}
	return out, nil
}
