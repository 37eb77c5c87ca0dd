package dynamodb_test

import (
	"context"
	"os"
	"testing"

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
	storagetest.Run(t, func(t *testing.T) storage.Store {
		return newStore(t, ddb.Config{})
	})
}
