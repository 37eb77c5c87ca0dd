package dynamodb_test

import (
	"context"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/drover-sched/drover/structs"

	"github.com/drover-sched/drover/internal/awstest"
	"github.com/drover-sched/drover/storage"
	ddb "github.com/drover-sched/drover/storage/dynamodb"
	"github.com/drover-sched/drover/storage/storagetest"
)

func TestMain(m *testing.M) { os.Exit(awstest.Main(m)) }

// newStore creates a fresh table on the local endpoint (kumo unless
// AWS_ENDPOINT_URL points elsewhere) and a store on it.
func newStore(t testing.TB, cfg ddb.Config) *ddb.Store {
	t.Helper()
	client := ddb.NewClient(awstest.Config(t))
	if cfg.Table == "" {
		cfg.Table = awstest.Name("drover-test")
	}
	if err := ddb.CreateTable(context.Background(), client, cfg.Table); err != nil {
		t.Fatal(err)
	}
	return ddb.New(client, cfg)
}

// TestConformance runs the ONE store conformance suite on DynamoDB
// (design invariant 7).
func TestConformance(t *testing.T) {
	t.Parallel()
	storagetest.Run(t, func(t *testing.T) storage.Store {
		if strings.HasSuffix(t.Name(), "/ConcurrentPlansNeverOverCommit") || strings.HasSuffix(t.Name(), "/ConcurrentPlansNeverShareAPort") {
			awstest.SkipOnMoto(t, motoNoIsolation)
		}
		return newStore(t, ddb.Config{})
	}, storagetest.Parallel())
}

// motoNoIsolation is why the tests of concurrent plans skip on moto.
const motoNoIsolation = "moto does not isolate concurrent transactions (its TransactWriteItems checks conditions " +
	"and writes without a lock, so two concurrent plans can both pass the capacity condition); kumo and DynamoDB do"

// TestCrashes: on DynamoDB a crash is a plan that stops after its first
// chunk (the chunk-crash hook); each chunk moves the node counters with
// its allocs, so usage stays exact.
func TestCrashes(t *testing.T) {
	storagetest.RunCrashes(t, func(t *testing.T) (storage.Store, func(string) bool) {
		var armed atomic.Bool
		s := newStore(t, ddb.Config{AfterChunk: func(_ *structs.Plan, chunk int) error {
			if chunk == 1 && armed.CompareAndSwap(true, false) {
				return storagetest.ErrCrash
			}
			return nil
		}})
		return s, func(op string) bool {
			if op != storagetest.CrashPlan {
				return false
			}
			armed.Store(true)
			return true
		}
	})
}
