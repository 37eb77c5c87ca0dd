package dynamodb

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// The objects of Nomad's API outside the scheduling flow. Items:
//
//	job source      JOB#<ns>#<job>  SUB#<version, zero-padded>  v: the submission
//	namespace       NAMESPACE       NS#<name>                   v, mi
//	scheduler conf  CONFIG          SCHEDULER                   v, mi
//
// A job's sources live in its partition, so purging and collecting the
// job removes them with the rest.

const (
	pkNamespace   = "NAMESPACE"
	pkConfig      = "CONFIG"
	skSchedConfig = "SCHEDULER"
)

func submissionSK(v uint64) string { return fmt.Sprintf("SUB#%020d", v) }

// putSubmission writes the source of the version a registration wrote.
// It follows the registration's transaction (a source is at most 1 MB
// before compression, too large to ride along in it); a crash in between
// leaves the version without a source, which readers tolerate.
func (s *Store) putSubmission(ctx context.Context, job *structs.Job, sub *structs.JobSubmission) error {
	c := *sub
	c.Namespace, c.JobID, c.Version, c.JobModifyIndex = job.Namespace, job.ID, job.Version, job.JobModifyIndex
	it := key(jobPK(job.Namespace, job.ID), submissionSK(job.Version))
	it["v"] = avB(encode(&c))
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.table, Item: it})
	return wrapErr(err, fmt.Sprintf("put source of job %s version %d", job.ID, job.Version))
}

// JobSubmission implements storage.Store.
func (s *Store) JobSubmission(ctx context.Context, ns, jobID string, version uint64) (*structs.JobSubmission, error) {
	it, err := s.get(ctx, jobPK(ns, jobID), submissionSK(version), true)
	if err != nil {
		return nil, err
	}
	if it == nil {
		return nil, storage.NotFoundf("job %q version %d in namespace %q has no submission", jobID, version, ns)
	}
	return decode[structs.JobSubmission](getB(it, "v"))
}

// AppendNodeEvents implements storage.Store.
func (s *Store) AppendNodeEvents(ctx context.Context, nodeID string, events ...*structs.NodeEvent) (*structs.Node, error) {
	out, err := withConflictRetry(ctx, s, func() (*structs.Node, error) {
		rec, err := s.readNode(ctx, nodeID)
		if err != nil {
			return nil, err
		}
		if rec == nil {
			return nil, storage.NotFoundf("node %q", nodeID)
		}
		idx := s.nextIndex()
		n := rec.node.Copy()
		n.AppendEvents(idx, events...)
		n.ModifyIndex = idx
		if err := s.writeNode(ctx, n, rec); err != nil {
			return nil, err
		}
		return n, s.bumpTables(ctx, idx, storage.TableNodes)
	})
	if err != nil {
		return nil, fmt.Errorf("append events of node %s: %w", nodeID, err)
	}
	return out, nil
}

// UpsertNamespace implements storage.Store.
func (s *Store) UpsertNamespace(ctx context.Context, ns *structs.Namespace) (*structs.Namespace, error) {
	out, err := withConflictRetry(ctx, s, func() (*structs.Namespace, error) {
		prev, err := s.get(ctx, pkNamespace, "NS#"+ns.Name, true)
		if err != nil {
			return nil, err
		}
		idx := s.nextIndex()
		n := ns.Copy()
		n.CreateIndex, n.ModifyIndex = idx, idx
		in := &dynamodb.PutItemInput{TableName: &s.table, ConditionExpression: aws.String("attribute_not_exists(PK)")}
		if prev != nil {
			old, err := decode[structs.Namespace](getB(prev, "v"))
			if err != nil {
				return nil, err
			}
			n.CreateIndex = old.CreateIndex
			in.ConditionExpression = aws.String("mi = :pmi")
			in.ExpressionAttributeValues = item{":pmi": avU(getU(prev, "mi"))}
		}
		it := key(pkNamespace, "NS#"+n.Name)
		it["v"], it["mi"] = avB(encode(n)), avU(idx)
		in.Item = it
		if _, err := s.db.PutItem(ctx, in); err != nil {
			return nil, raceOnConflict(wrapErr(err, "put namespace "+n.Name))
		}
		return n, s.bumpTables(ctx, idx, storage.TableNamespaces)
	})
	if err != nil {
		return nil, fmt.Errorf("upsert namespace %s: %w", ns.Name, err)
	}
	return out, nil
}

// Namespace implements storage.Store.
func (s *Store) Namespace(ctx context.Context, name string) (*structs.Namespace, error) {
	it, err := s.get(ctx, pkNamespace, "NS#"+name, true)
	if err != nil {
		return nil, err
	}
	if it == nil {
		return nil, storage.NotFoundf("namespace %q", name)
	}
	return decode[structs.Namespace](getB(it, "v"))
}

// Namespaces implements storage.Store.
func (s *Store) Namespaces(ctx context.Context) ([]*structs.Namespace, error) {
	items, err := s.queryPrefix(ctx, pkNamespace, "NS#", true)
	if err != nil {
		return nil, err
	}
	out, err := decodeValues[structs.Namespace](items)
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// DeleteNamespace implements storage.Store.
func (s *Store) DeleteNamespace(ctx context.Context, name string) error {
	idx := s.nextIndex()
	_, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &s.table, Key: key(pkNamespace, "NS#"+name),
		ConditionExpression: aws.String("attribute_exists(PK)")})
	if err = wrapErr(err, "delete namespace "+name); errors.Is(err, storage.ErrConflict) {
		return storage.NotFoundf("namespace %q", name)
	} else if err != nil {
		return err
	}
	return s.bumpTables(ctx, idx, storage.TableNamespaces)
}

// SchedulerConfig implements storage.Store.
func (s *Store) SchedulerConfig(ctx context.Context) (*structs.SchedulerConfiguration, error) {
	it, err := s.get(ctx, pkConfig, skSchedConfig, true)
	if err != nil {
		return nil, err
	}
	if it == nil {
		return structs.DefaultSchedulerConfiguration(), nil
	}
	return decode[structs.SchedulerConfiguration](getB(it, "v"))
}

// SetSchedulerConfig implements storage.Store.
func (s *Store) SetSchedulerConfig(ctx context.Context, cfg *structs.SchedulerConfiguration, cas *uint64) (bool, uint64, error) {
	type result struct {
		written bool
		idx     uint64
	}
	res, err := withConflictRetry(ctx, s, func() (result, error) {
		prev, err := s.get(ctx, pkConfig, skSchedConfig, true)
		if err != nil {
			return result{}, err
		}
		idx := s.nextIndex()
		c := *cfg
		c.CreateIndex, c.ModifyIndex = idx, idx
		var cur uint64
		in := &dynamodb.PutItemInput{TableName: &s.table, ConditionExpression: aws.String("attribute_not_exists(PK)")}
		if prev != nil {
			old, err := decode[structs.SchedulerConfiguration](getB(prev, "v"))
			if err != nil {
				return result{}, err
			}
			cur, c.CreateIndex = getU(prev, "mi"), old.CreateIndex
			in.ConditionExpression = aws.String("mi = :pmi")
			in.ExpressionAttributeValues = item{":pmi": avU(cur)}
		}
		if cas != nil && *cas != cur {
			return result{idx: idx}, nil
		}
		it := key(pkConfig, skSchedConfig)
		it["v"], it["mi"] = avB(encode(&c)), avU(idx)
		in.Item = it
		if _, err := s.db.PutItem(ctx, in); err != nil {
			return result{}, raceOnConflict(wrapErr(err, "put scheduler configuration"))
		}
		return result{written: true, idx: idx}, s.bumpTables(ctx, idx, storage.TableSchedulerConfig)
	})
	if err != nil {
		return false, 0, fmt.Errorf("set scheduler configuration: %w", err)
	}
	return res.written, res.idx, nil
}
