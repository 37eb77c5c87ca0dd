package scalebench

import (
	"context"
	"os"
	"testing"
)

// TestC1MShapeSmoke runs the C1M harness at a tiny size: every alloc of
// every job submitted through the API is placed by the server's workers.
func TestC1MShapeSmoke(t *testing.T) {
	res, err := RunC1M(context.Background(), C1MConfig{Nodes: 20, Jobs: 6, Count: 25, Every: 2, Dir: t.TempDir(), Out: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	if res.Placed != 150 || res.FirstRate <= 0 || res.LastRate <= 0 {
		t.Fatalf("result: %+v", res)
	}
}

// TestBurstSmoke runs the burst harness at a tiny size: every job is
// placed, and after the purge every alloc is stopped.
func TestBurstSmoke(t *testing.T) {
	res, err := RunBurst(context.Background(), BurstConfig{Jobs: 40, Nodes: 3, Dir: t.TempDir(), Out: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	if res.Registered <= 0 || res.Purged <= 0 {
		t.Fatalf("result: %+v", res)
	}
}
