package dynamodb

import (
	"context"
	"strconv"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/drover-sched/drover/storage"
)

// Table indexes (X-Nomad-Index and blocking queries). A table's index is
// the largest of its shard items, INDEX#<table>#<k> / INDEX, each holding
// `idx`. A write, after it has landed, moves one shard of each table it
// wrote to its own index (chosen at random; never backwards: the update
// is conditional on the stored value being smaller), so that a reader
// woken by the move sees the write. Shards have partition keys of their
// own: the tables every evaluation and client report writes (jobs,
// allocs, evals, deployments) have 32 of them, so that at 10,000
// placements per second none takes more than about 650 writes per second
// (README.md, "Hot items"); the others change rarely and have one.
//
// Reading a table's index is one strongly consistent BatchGetItem of its
// shards (1 read unit each), so the value read never goes back: every
// shard only grows, and a strongly consistent read sees every bump that
// finished before it. A write whose bump lands after a reader read a
// larger value from a concurrent write is not seen by a blocking query
// waiting at that value until the next write or the end of its wait; the
// counter item this replaced had the same window (its bump was
// conditional in the same way).

// indexShards is how many shard items a table's index has.
func indexShards(table string) int {
	switch table {
	case storage.TableJobs, storage.TableAllocs, storage.TableEvals, storage.TableDeployments:
		return hotIndexShards
	case storage.TableNodes:
		return 8
	}
	return 1
}

// hotIndexShards is the shard count of the tables every evaluation writes.
const hotIndexShards = 32

func indexKey(table string, shard int) item {
	return key("INDEX#"+table+"#"+strconv.Itoa(shard), "INDEX")
}

// bumpTables moves one shard of each table's index to idx (never
// backwards), concurrently. It runs after the write it announces has
// landed.
func (s *Store) bumpTables(ctx context.Context, idx uint64, tables ...string) error {
	seen := map[string]bool{}
	var uniq []string
	for _, t := range tables {
		if !seen[t] {
			seen[t] = true
			uniq = append(uniq, t)
		}
	}
	errs := make([]error, len(uniq))
	var wg sync.WaitGroup
	for i, t := range uniq {
		shard := 0
		if n := indexShards(t); n > 1 {
			s.rndMu.Lock()
			shard = s.rnd.IntN(n)
			s.rndMu.Unlock()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
				TableName: &s.table, Key: indexKey(t, shard),
				UpdateExpression:          aws.String("SET idx = :i"),
				ConditionExpression:       aws.String("attribute_not_exists(idx) OR idx < :i"),
				ExpressionAttributeValues: item{":i": avU(idx)},
			})
			if kind, _ := classify(err); kind == failCondition {
				return // a later write already moved this shard past idx
			}
			if err != nil {
				errs[i] = wrapErr(err, "move index of table "+t)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Index implements storage.Store: the largest of the table's shards.
func (s *Store) Index(ctx context.Context, table string) (uint64, error) {
	n := indexShards(table)
	keys := make([]item, n)
	for k := range keys {
		keys[k] = indexKey(table, k)
	}
	items, err := s.batchGet(ctx, keys)
	if err != nil {
		return 0, err
	}
	var top uint64
	for _, it := range items {
		top = max(top, getU(it, "idx"))
	}
	return top, nil
}
