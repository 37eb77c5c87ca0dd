// Package sqs is the eval queue of drover's AWS home on SQS FIFO: the
// message format, the producer (MessageGroupId = namespace/job, so one
// evaluation per job is in flight; MessageDeduplicationId = eval ID plus
// its modify index, so a deliberate re-send is not swallowed by the
// five-minute dedup window), the Queue that routes evaluations due now to
// SQS and delayed ones to EventBridge Scheduler, and the Lambda batch
// handler of the evaluate function (partial batch responses with the FIFO
// rule, early evaluations put back, delivery limit → failed eval with a
// follow-up).
package sqs

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/drover-sched/drover/structs"
)

// Message is the body of an eval queue message (and of a delayed eval's
// schedule target input).
type Message struct {
	EvalID      string
	Namespace   string
	JobID       string
	ModifyIndex uint64
	// WaitUntil is the eval's wait-until (zero: due now).
	WaitUntil time.Time `json:",omitempty"`
}

// Encode returns the message body for an evaluation.
func Encode(ev *structs.Evaluation) string {
	m := Message{EvalID: ev.ID, Namespace: ev.Namespace, JobID: ev.JobID, ModifyIndex: ev.ModifyIndex}
	if !ev.WaitUntil.IsZero() {
		m.WaitUntil = ev.WaitUntil.UTC()
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// Decode reads a message body.
func Decode(body string) (*Message, error) {
	var m Message
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		return nil, fmt.Errorf("decode eval message %.80q: %w", body, err)
	}
	if m.EvalID == "" {
		return nil, fmt.Errorf("eval message %.80q names no evaluation", body)
	}
	return &m, nil
}

// GroupID is the FIFO message group of a job: "namespace/job", or a hash
// of it when it is longer than SQS's 128 characters or uses characters SQS
// does not allow.
func GroupID(namespace, jobID string) string {
	id := structs.NamespacedJobID(namespace, jobID)
	ok := len(id) <= 128
	for i := 0; ok && i < len(id); i++ {
		c := id[i]
		ok = c > 32 && c < 127
	}
	if ok {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return "h:" + hex.EncodeToString(sum[:])
}

// DedupID is an evaluation's MessageDeduplicationId: its ID and modify
// index, so the same write of an eval is sent once per five minutes, and a
// re-send after the eval changed (unblocked, re-queued) goes through.
func DedupID(ev *structs.Evaluation) string {
	return ev.ID + "-" + strconv.FormatUint(ev.ModifyIndex, 10)
}
