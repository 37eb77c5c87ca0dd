package embedded

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/drover-sched/drover/structs"
)

func ev(id, job string, prio int, createIndex uint64) *structs.Evaluation {
	return &structs.Evaluation{ID: id, Namespace: "default", JobID: job, Priority: prio,
		CreateIndex: createIndex, Status: structs.EvalStatusPending}
}

func dequeue(t *testing.T, b *Broker, within time.Duration) (*structs.Evaluation, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	e, tok, err := b.Dequeue(ctx)
	if err != nil {
		t.Fatalf("dequeue: %v", err)
	}
	return e, tok
}

func expectNothing(t *testing.T, b *Broker, within time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if e, _, err := b.Dequeue(ctx); err == nil {
		t.Fatalf("unexpected delivery of %s", e.ID)
	}
}

func TestPriorityThenAge(t *testing.T) {
	b := New(Config{})
	defer b.Close()
	ctx := context.Background()
	_ = b.Enqueue(ctx, ev("low", "a", 10, 1), ev("old", "b", 50, 2), ev("new", "c", 50, 3), ev("high", "d", 90, 4))
	var got []string
	for range 4 {
		e, tok := dequeue(t, b, time.Second)
		got = append(got, e.ID)
		if err := b.Ack(e.ID, tok); err != nil {
			t.Fatal(err)
		}
	}
	if want := "[high old new low]"; fmtSlice(got) != want {
		t.Fatalf("order %v, want %s", got, want)
	}
}

func fmtSlice(s []string) string {
	out := "["
	for i, x := range s {
		if i > 0 {
			out += " "
		}
		out += x
	}
	return out + "]"
}

// TestOneEvalPerJobInFlight: invariant 1 on the embedded home.
func TestOneEvalPerJobInFlight(t *testing.T) {
	b := New(Config{})
	defer b.Close()
	_ = b.Enqueue(context.Background(), ev("a1", "a", 50, 1), ev("a2", "a", 50, 2), ev("b1", "b", 50, 3))
	first, tok1 := dequeue(t, b, time.Second)
	second, tok2 := dequeue(t, b, time.Second)
	if first.ID != "a1" || second.ID != "b1" {
		t.Fatalf("got %s then %s; a2 must wait for a1", first.ID, second.ID)
	}
	expectNothing(t, b, 100*time.Millisecond)
	if err := b.Ack("a1", tok1); err != nil {
		t.Fatal(err)
	}
	next, _ := dequeue(t, b, time.Second)
	if next.ID != "a2" {
		t.Fatalf("after a1's ack got %s", next.ID)
	}
	_ = b.Ack("b1", tok2)
}

func TestNackRedeliversAfterBackoff(t *testing.T) {
	b := New(Config{NackDelay: 50 * time.Millisecond})
	defer b.Close()
	_ = b.Enqueue(context.Background(), ev("a1", "a", 50, 1), ev("a2", "a", 50, 2))
	e, tok := dequeue(t, b, time.Second)
	start := time.Now()
	if err := b.Nack(e.ID, tok, "boom"); err != nil {
		t.Fatal(err)
	}
	again, tok2 := dequeue(t, b, time.Second)
	if again.ID != "a1" {
		t.Fatalf("redelivered %s; the nacked eval keeps its job's turn", again.ID)
	}
	if time.Since(start) < 40*time.Millisecond {
		t.Fatal("redelivered before the back-off")
	}
	if err := b.Ack(e.ID, tok); !errors.Is(err, ErrNotOutstanding) {
		t.Fatalf("ack with the old token: %v", err)
	}
	if err := b.Ack(again.ID, tok2); err != nil {
		t.Fatal(err)
	}
}

func TestDeliveryLimit(t *testing.T) {
	var mu sync.Mutex
	var failed []string
	done := make(chan struct{})
	b := New(Config{DeliveryLimit: 2, NackDelay: time.Millisecond, OnDeliveryLimit: func(e *structs.Evaluation, reason string) {
		mu.Lock()
		failed = append(failed, e.ID+":"+reason)
		mu.Unlock()
		close(done)
	}})
	defer b.Close()
	_ = b.Enqueue(context.Background(), ev("a1", "a", 50, 1), ev("a2", "a", 50, 2))
	for i := range 2 {
		e, tok := dequeue(t, b, time.Second)
		if e.ID != "a1" {
			t.Fatalf("delivery %d: %s", i, e.ID)
		}
		_ = b.Nack(e.ID, tok, "boom")
	}
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("delivery limit not reported")
	}
	if failed[0] != "a1:boom" {
		t.Fatalf("failed: %v", failed)
	}
	next, _ := dequeue(t, b, time.Second)
	if next.ID != "a2" {
		t.Fatalf("after a1 gave up, got %s", next.ID)
	}
}

func TestVisibilityTimeoutRedelivers(t *testing.T) {
	b := New(Config{VisibilityTimeout: 50 * time.Millisecond, NackDelay: time.Millisecond})
	defer b.Close()
	_ = b.Enqueue(context.Background(), ev("a1", "a", 50, 1))
	e, tok := dequeue(t, b, time.Second)
	again, _ := dequeue(t, b, time.Second) // the worker "crashed": no ack
	if again.ID != e.ID {
		t.Fatalf("redelivered %s", again.ID)
	}
	if err := b.Ack(e.ID, tok); !errors.Is(err, ErrNotOutstanding) {
		t.Fatalf("late ack of a timed-out delivery: %v", err)
	}
}

func TestDelayedEvalWaitsForWaitUntil(t *testing.T) {
	b := New(Config{})
	defer b.Close()
	d := ev("later", "a", 50, 1)
	d.WaitUntil = time.Now().Add(150 * time.Millisecond)
	_ = b.Enqueue(context.Background(), d)
	if s := b.Stats(); s.Delayed != 1 {
		t.Fatalf("stats %+v", s)
	}
	expectNothing(t, b, 80*time.Millisecond)
	e, _ := dequeue(t, b, time.Second)
	if e.ID != "later" || time.Now().Before(d.WaitUntil) {
		t.Fatalf("delivered %s at %v, wait until %v", e.ID, time.Now(), d.WaitUntil)
	}
}

func TestEnqueueIsIdempotentAndSkipsTerminal(t *testing.T) {
	b := New(Config{})
	defer b.Close()
	done := ev("done", "x", 50, 1)
	done.Status = structs.EvalStatusComplete
	blocked := ev("blocked", "y", 50, 1)
	blocked.Status = structs.EvalStatusBlocked
	_ = b.Enqueue(context.Background(), ev("a1", "a", 50, 1), ev("a1", "a", 50, 1), done, blocked)
	e, tok := dequeue(t, b, time.Second)
	_ = b.Ack(e.ID, tok)
	expectNothing(t, b, 100*time.Millisecond)
}

// TestEnqueueWhileInFlightDeliversAgainAfterAck: an eval enqueued again
// while it is in flight (a blocked eval unblocked between its commit and
// its ack: by its own plan's freed room, or another's) is delivered once
// more after its ack, not dropped: the state store says pending, and
// nothing else would ever send it (found by the process-level chaos
// suite, seed 145: an eval pending at rest, its job without allocs).
// Sent again several times while in flight, it is delivered once; after
// a nack, only the nack's redelivery comes.
func TestEnqueueWhileInFlightDeliversAgainAfterAck(t *testing.T) {
	b := New(Config{NackDelay: 10 * time.Millisecond})
	defer b.Close()
	_ = b.Enqueue(context.Background(), ev("a1", "a", 50, 1))
	e, tok := dequeue(t, b, time.Second)
	again := ev("a1", "a", 50, 1)
	again.StatusDescription = "unblocked"
	_ = b.Enqueue(context.Background(), again, again)
	expectNothing(t, b, 50*time.Millisecond) // one eval of a job at a time
	_ = b.Ack(e.ID, tok)
	e, tok = dequeue(t, b, time.Second)
	if e.ID != "a1" || e.StatusDescription != "unblocked" {
		t.Fatalf("delivered %s (%q), want a1 as sent again", e.ID, e.StatusDescription)
	}
	_ = b.Ack(e.ID, tok)
	expectNothing(t, b, 100*time.Millisecond)

	_ = b.Enqueue(context.Background(), ev("b1", "b", 50, 1))
	e, tok = dequeue(t, b, time.Second)
	_ = b.Enqueue(context.Background(), ev("b1", "b", 50, 1))
	_ = b.Nack(e.ID, tok, "failed")
	e, tok = dequeue(t, b, time.Second)
	_ = b.Ack(e.ID, tok)
	expectNothing(t, b, 100*time.Millisecond)
}

func TestCloseUnblocksDequeue(t *testing.T) {
	b := New(Config{})
	errc := make(chan error, 1)
	go func() {
		_, _, err := b.Dequeue(context.Background())
		errc <- err
	}()
	time.Sleep(20 * time.Millisecond)
	b.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("dequeue after close: %v", err)
		}
	case <-time.After(time.Second):
		t.Fatal("dequeue still blocked after close")
	}
}
