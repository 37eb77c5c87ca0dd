package dynamodb

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

func decodeEval(it item) (*structs.Evaluation, error) {
	return decode[structs.Evaluation](getB(it, "v"))
}

// UpsertEvals implements storage.Store. The evals are written in as few
// transactions as fit (usually one), each eval with the change of its
// job's count of open evals.
func (s *Store) UpsertEvals(ctx context.Context, evals ...*structs.Evaluation) (uint64, error) {
	if len(evals) == 0 {
		return 0, nil
	}
	idx, err := withConflictRetry(ctx, s, func() (uint64, error) {
		keys := make([]item, len(evals))
		for i, e := range evals {
			keys[i] = key(jobPK(e.Namespace, e.JobID), evalSK(e.ID))
		}
		cur, err := s.batchGet(ctx, keys)
		if err != nil {
			return 0, err
		}
		idx := s.nextIndex()
		now := time.Now().UnixNano()
		var units []*unit
		for i, in := range evals {
			var prev *structs.Evaluation
			if it := cur[keyString(keys[i])]; it != nil {
				if prev, err = decodeEval(it); err != nil {
					return 0, err
				}
			}
			e := in.Copy()
			stampEval(e, prev, idx, now)
			u := newUnit()
			u.acts = s.evalActions(e, prev)
			h := u.head(e.Namespace, e.JobID)
			h.open += openDelta(prev, e)
			h.seen = true
			units = append(units, u)
		}
		for _, c := range pack(units, s.cfg.ChunkActions) {
			if err := s.transact(ctx, s.render(c)); err != nil {
				return 0, raceOnConflict(err)
			}
		}
		if err := s.bumpTables(ctx, idx, storage.TableEvals, storage.TableJobs); err != nil {
			return 0, err
		}
		return idx, nil
	})
	if err != nil {
		return 0, fmt.Errorf("upsert %d evals: %w", len(evals), err)
	}
	return idx, nil
}

// Eval implements storage.Store: the eval's pointer names its job, whose
// partition holds it; both reads are strongly consistent.
func (s *Store) Eval(ctx context.Context, id string) (*structs.Evaluation, error) {
	ptr, err := s.get(ctx, evalPtrPK(id), skEvalPtr, true)
	if err != nil {
		return nil, err
	}
	if ptr == nil {
		return nil, storage.NotFoundf("evaluation %q", id)
	}
	it, err := s.get(ctx, jobPK(getS(ptr, "ns"), getS(ptr, "jid")), evalSK(id), true)
	if err != nil {
		return nil, err
	}
	if it == nil {
		return nil, storage.NotFoundf("evaluation %q", id)
	}
	return decodeEval(it)
}

// evalsByKeys fetches evals listed by a GSI, strongly consistent.
func (s *Store) evalsByKeys(ctx context.Context, keys []item) ([]*structs.Evaluation, error) {
	items, err := s.batchGet(ctx, keys)
	if err != nil {
		return nil, err
	}
	out := make([]*structs.Evaluation, 0, len(items))
	for _, it := range items {
		e, err := decodeEval(it)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// Evals implements storage.Store. Pending and blocked evals come from the
// sparse gsi2, others from gsi1; the items themselves are read strongly
// consistent and filtered again.
func (s *Store) Evals(ctx context.Context, f storage.EvalFilter) ([]*structs.Evaluation, error) {
	var keys []item
	switch {
	case f.Status == structs.EvalStatusPending || f.Status == structs.EvalStatusBlocked:
		for shard := 0; shard < 4; shard++ {
			ks, err := s.queryIndex(ctx, GSI2, "g2pk", "g2sk", fmt.Sprintf("EVALS#%s#%d", f.Status, shard), "")
			if err != nil {
				return nil, err
			}
			keys = append(keys, ks...)
		}
	case f.JobID != "" && f.Namespace != "" && f.Namespace != "*":
		es, err := s.EvalsByJob(ctx, f.Namespace, f.JobID)
		if err != nil {
			return nil, err
		}
		return filterEvals(es, f), nil
	default:
		for _, shard := range shardsFor(f.Prefix) {
			ks, err := s.queryIndex(ctx, GSI1, "g1pk", "g1sk", "EVAL#"+shard, f.Prefix)
			if err != nil {
				return nil, err
			}
			keys = append(keys, ks...)
		}
	}
	es, err := s.evalsByKeys(ctx, keys)
	if err != nil {
		return nil, err
	}
	return filterEvals(es, f), nil
}

func filterEvals(es []*structs.Evaluation, f storage.EvalFilter) []*structs.Evaluation {
	out := es[:0]
	for _, e := range es {
		if f.Namespace != "" && f.Namespace != "*" && e.Namespace != f.Namespace {
			continue
		}
		if f.JobID != "" && e.JobID != f.JobID {
			continue
		}
		if f.Status != "" && e.Status != f.Status {
			continue
		}
		if !strings.HasPrefix(e.ID, f.Prefix) {
			continue
		}
		out = append(out, e)
	}
	sortEvals(out)
	return out
}

// EvalsByJob implements storage.Store: one strongly consistent query of
// the job's partition.
func (s *Store) EvalsByJob(ctx context.Context, ns, jobID string) ([]*structs.Evaluation, error) {
	items, err := s.queryPrefix(ctx, jobPK(ns, jobID), "EVAL#", true)
	if err != nil {
		return nil, err
	}
	out := make([]*structs.Evaluation, 0, len(items))
	for _, it := range items {
		e, err := decodeEval(it)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	sortEvals(out)
	return out, nil
}

func sortEvals(es []*structs.Evaluation) {
	sort.Slice(es, func(i, j int) bool {
		if es[i].CreateIndex != es[j].CreateIndex {
			return es[i].CreateIndex < es[j].CreateIndex
		}
		return es[i].ID < es[j].ID
	})
}

// addEvals adds the writes of evals (stamped at idx) and their jobs' open
// counts to u; the stored evals are read first.
func (s *Store) addEvals(ctx context.Context, u *unit, idx uint64, evals []*structs.Evaluation) error {
	if len(evals) == 0 {
		return nil
	}
	keys := make([]item, len(evals))
	for i, e := range evals {
		keys[i] = key(jobPK(e.Namespace, e.JobID), evalSK(e.ID))
	}
	cur, err := s.batchGet(ctx, keys)
	if err != nil {
		return err
	}
	now := time.Now().UnixNano()
	for i, in := range evals {
		var prev *structs.Evaluation
		if it := cur[keyString(keys[i])]; it != nil {
			if prev, err = decodeEval(it); err != nil {
				return err
			}
			if err := readAfterIndex(idx, prev.ModifyIndex, "eval "+prev.ID); err != nil {
				return err
			}
		}
		e := in.Copy()
		stampEval(e, prev, idx, now)
		u.acts = append(u.acts, s.evalActions(e, prev)...)
		h := u.head(e.Namespace, e.JobID)
		h.open += openDelta(prev, e)
		h.seen = true
	}
	return nil
}

// StartEvalAttempt counts one real attempt at evaluating an eval, when its
// evaluation starts: an UpdateItem ADD of the eval item's `att`, conditional
// on the eval existing and not being terminal. It returns the attempts
// counted since the eval was last written (every write of an eval, such as
// its status at the end of an evaluation, replaces the item and so starts
// the count again), or 0 when the eval is terminal or unknown (nothing is
// counted). Unlike SQS's ApproximateReceiveCount, deliveries handed back
// unprocessed and throttled deliveries are not counted.
func (s *Store) StartEvalAttempt(ctx context.Context, namespace, jobID, evalID string) (int, error) {
	out, err := s.db.UpdateItem(ctx, startAttemptInput(s.table, namespace, jobID, evalID))
	if kind, _ := classify(err); kind == failCondition {
		return 0, nil
	}
	if err != nil {
		return 0, wrapErr(err, "count an attempt of eval "+evalID)
	}
	return int(getN(out.Attributes, "att")), nil
}

func startAttemptInput(table, namespace, jobID, evalID string) *dynamodb.UpdateItemInput {
	return &dynamodb.UpdateItemInput{TableName: &table, Key: key(jobPK(namespace, jobID), evalSK(evalID)),
		UpdateExpression:          aws.String("ADD att :one"),
		ConditionExpression:       aws.String("attribute_exists(PK) AND trm = :f"),
		ExpressionAttributeValues: item{":one": avN(1), ":f": avBool(false)},
		ReturnValues:              types.ReturnValueUpdatedNew}
}
