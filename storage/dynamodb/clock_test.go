package dynamodb

import (
	"sync"
	"testing"
	"time"
)

// TestClockIssuesGrowingIndexes: the hybrid clock's indexes strictly grow
// within one store, also when the wall clock stands still or goes back,
// are unique across goroutines, and jump past every index observed.
func TestClockIssuesGrowingIndexes(t *testing.T) {
	wall := time.UnixMicro(1_000_000)
	c := &hlc{now: func() time.Time { return wall }}
	a := c.next()
	if a != 1_000_000 {
		t.Fatalf("first index %d, want the wall clock's microseconds", a)
	}
	if b := c.next(); b != a+1 {
		t.Fatalf("same microsecond: %d after %d, want +1", b, a)
	}
	wall = wall.Add(-time.Second) // the wall clock steps back
	if b := c.next(); b != a+2 {
		t.Fatalf("after the wall clock went back: %d, want %d", b, a+2)
	}
	c.observe(5_000_000) // another writer's clock is ahead
	if b := c.next(); b != 5_000_001 {
		t.Fatalf("after observing 5000000: %d", b)
	}
	c.observe(10) // an older index changes nothing
	if b := c.next(); b != 5_000_002 {
		t.Fatalf("after observing an older index: %d", b)
	}
	var mu sync.Mutex
	seen := map[uint64]bool{}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				v := c.next()
				mu.Lock()
				if seen[v] {
					t.Errorf("index %d issued twice", v)
				}
				seen[v] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

// TestObserveOnRead: every index attribute of an item read moves the clock.
func TestObserveOnRead(t *testing.T) {
	s := New(nil, Config{})
	s.clock.now = func() time.Time { return time.UnixMicro(100) }
	s.observeItems(item{"mi": avU(7)}, item{"pIdx": avU(900), "v": avB([]byte("x"))}, item{"idx": avU(50)})
	if got := s.nextIndex(); got != 901 {
		t.Fatalf("next index %d, want 901 (past the largest index read)", got)
	}
}
