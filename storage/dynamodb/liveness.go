package dynamodb

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/drover-sched/drover/structs"
)

// NodeLiveness is what the sweeper's liveness check reads of one node: its
// status and drain flag, and its heartbeat item.
type NodeLiveness struct {
	NodeID string
	Status string
	Drain  bool
	// HeartbeatAt and TTL are from the node's heartbeat item, written by
	// its agent; Heard is false when there is none yet.
	HeartbeatAt time.Time
	TTL         time.Duration
	Heard       bool
	// ReactionsPending is the node's mark of a status change whose
	// reactions have not all run (structs.Node.ReactionsPending).
	ReactionsPending uint64
}

// NodesLiveness reads every node's status and heartbeat for the sweeper,
// cheaply: the gsi1 listing of nodes, then one eventually consistent
// BatchGetItem of their META and HB items (half a read unit each, both
// are under 4 KB). It only tells the sweeper which nodes to look at: what
// it then changes it re-reads strongly consistently (Node, LastHeartbeat).
func (s *Store) NodesLiveness(ctx context.Context) ([]NodeLiveness, error) {
	listed, err := s.queryIndex(ctx, GSI1, "g1pk", "g1sk", "NODE", "")
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	keys := make([]item, 0, 2*len(listed))
	for _, k := range listed {
		id := getS(k, "g1sk")
		keys = append(keys, key(nodePK(id), skMeta), key(nodePK(id), skHB))
	}
	items, err := s.batchGetWith(ctx, keys, false)
	if err != nil {
		return nil, fmt.Errorf("read nodes and heartbeats: %w", err)
	}
	out := make([]NodeLiveness, 0, len(listed))
	for _, k := range listed {
		id := getS(k, "g1sk")
		meta := items[keyString(key(nodePK(id), skMeta))]
		if meta == nil || s.valueless(id, meta) {
			continue
		}
		rec, err := decodeNode(meta)
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", id, err)
		}
		l := NodeLiveness{NodeID: id, Status: rec.node.Status, Drain: rec.node.Drain, ReactionsPending: rec.node.ReactionsPending}
		if hb := items[keyString(key(nodePK(id), skHB))]; hb != nil && has(hb, "hbAt") {
			l.HeartbeatAt, l.TTL, l.Heard = time.UnixMilli(getN(hb, "hbAt")), time.Duration(getN(hb, "hbTTL"))*time.Millisecond, true
		}
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].NodeID < out[j].NodeID })
	return out, nil
}

// Alive reports whether the node was heard from within its TTL plus grace
// at now.
func (l NodeLiveness) Alive(now time.Time, grace time.Duration) bool {
	return l.Heard && now.Before(l.HeartbeatAt.Add(l.TTL+grace))
}

// Serving reports whether the node's status is one a missed heartbeat
// changes (ready or initializing).
func (l NodeLiveness) Serving() bool {
	return l.Status == structs.NodeStatusReady || l.Status == structs.NodeStatusInit
}
