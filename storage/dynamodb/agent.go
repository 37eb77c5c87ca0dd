package dynamodb

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/drover-sched/drover/structs"
)

// The node agent's own reads and writes on AWS. Each touches only items
// whose partition key is NODE#<node id>, and the heartbeat only its own
// attributes, so the node-agent policy (dynamodb:LeadingKeys,
// dynamodb:Attributes) allows exactly these calls.

// AgentAssignmentIndex is the agent's poll: an eventually consistent
// GetItem of NODE#<id>/IDX (< 4 KB: 0.5 read units). It returns a value
// that changes whenever a write moves the node's assignment index (the
// index and the count of writes, mixed; AgentAssignments returns the
// same value), which is all the agent needs: two writers may stamp the
// same index, and the chunks of one plan do.
func (s *Store) AgentAssignmentIndex(ctx context.Context, nodeID string) (uint64, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: key(nodePK(nodeID), skIdx),
		ProjectionExpression: aws.String("idx, chg")})
	if err != nil {
		return 0, wrapErr(err, "assignment index of node "+nodeID)
	}
	return assignmentToken(out.Item), nil
}

// assignmentToken mixes a node index item's index and write count into
// one value that changes with either (FNV-1a, 63 bits so that it stays a
// positive int64 for any reader).
func assignmentToken(it item) uint64 {
	idx, chg := getU(it, "idx"), getU(it, "chg")
	if chg == 0 {
		return idx
	}
	h := fnv.New64a()
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], idx)
	binary.BigEndian.PutUint64(b[8:], chg)
	_, _ = h.Write(b[:])
	return h.Sum64() >> 1
}

// AgentAssignments reads the node's assignments (each with the job cut to
// its group) strongly consistent, and the index they were read at (read
// first, so a change landing meanwhile moves it again).
func (s *Store) AgentAssignments(ctx context.Context, nodeID string) ([]*structs.Allocation, uint64, error) {
	it, err := s.get(ctx, nodePK(nodeID), skIdx, true)
	if err != nil {
		return nil, 0, err
	}
	idx := assignmentToken(it)
	items, err := s.queryPrefix(ctx, nodePK(nodeID), "ALLOC#", true)
	if err != nil {
		return nil, 0, err
	}
	out := make([]*structs.Allocation, 0, len(items))
	for _, it := range items {
		if s.valueless(nodeID, it) {
			continue
		}
		a, err := decode[structs.Allocation](getB(it, "v"))
		if err != nil {
			return nil, 0, fmt.Errorf("assignment %s: %w", getS(it, "SK"), err)
		}
		if b := getB(it, "j"); b != nil {
			if a.Job, err = decode[structs.Job](b); err != nil {
				return nil, 0, fmt.Errorf("assignment %s: %w", getS(it, "SK"), err)
			}
		}
		a.AllocModifyIndex = max(a.AllocModifyIndex, getU(it, "ami"))
		out = append(out, a)
	}
	return out, idx, nil
}

// LastHeartbeat returns when the node last heartbeat and the TTL it was
// given (ok false: never).
func (s *Store) LastHeartbeat(ctx context.Context, nodeID string) (at time.Time, ttl time.Duration, ok bool, err error) {
	it, err := s.get(ctx, nodePK(nodeID), skHB, true)
	if err != nil || it == nil {
		return time.Time{}, 0, false, err
	}
	return time.UnixMilli(getN(it, "hbAt")), time.Duration(getN(it, "hbTTL")) * time.Millisecond, true, nil
}

// Heartbeat writes the node's heartbeat item (what a node agent does on
// AWS with its own credentials) and returns nothing else; see
// nodeagent's AWS control plane.
func (s *Store) Heartbeat(ctx context.Context, nodeID string, ttl time.Duration) error {
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &s.table, Key: key(nodePK(nodeID), skHB),
		UpdateExpression:          aws.String("SET hbAt = :at, hbTTL = :ttl"),
		ExpressionAttributeValues: item{":at": avN(time.Now().UnixMilli()), ":ttl": avN(ttl.Milliseconds())}})
	return wrapErr(err, "heartbeat of node "+nodeID)
}
