package nodeagent

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/drover-sched/drover/drivers"
	"github.com/drover-sched/drover/structs"
)

// Layout of the local state file:
//
//	meta/schema                                    schema version
//	allocs/<alloc id>/alloc                        the alloc (with its job), rewritten when the server changes it
//	allocs/<alloc id>/immutable                    written once: agent version, received at, alloc dir
//	allocs/<alloc id>/mutable                      client status, description, failure reason, health, saved at
//	allocs/<alloc id>/tasks/<task>/state           the TaskState
//	allocs/<alloc id>/tasks/<task>/handle          the driver's TaskHandle of the running launch, if any
var (
	bucketMeta     = []byte("meta")
	bucketAllocs   = []byte("allocs")
	bucketTasks    = []byte("tasks")
	keySchema      = []byte("schema")
	keyAlloc       = []byte("alloc")
	keyImmutable   = []byte("immutable")
	keyMutable     = []byte("mutable")
	keyTaskState   = []byte("state")
	keyTaskHandle  = []byte("handle")
	stateSchemaVer = []byte("1")
)

// allocImmutableState is written once per alloc.
type allocImmutableState struct {
	// AgentVersion is the version of the agent that first ran the alloc.
	AgentVersion string
	// CreatedAt is when the agent received the alloc.
	CreatedAt time.Time
	// AllocDir is the alloc dir's root.
	AllocDir string `json:",omitempty"`
}

// allocMutableState is rewritten when the alloc's client-side state
// changes.
type allocMutableState struct {
	ClientStatus      string
	ClientDescription string
	DeploymentStatus  *structs.AllocDeploymentStatus `json:",omitempty"`
	// FailReason is set when the alloc failed as a whole (not through a
	// task): setup failed, or its state could not be restored.
	FailReason string `json:",omitempty"`
	// FailedAt is when FailReason was set.
	FailedAt time.Time `json:",omitempty"`
	// Health is the deployment health verdict, once reached.
	Health *allocHealth `json:",omitempty"`
	// MaxRunDurationExceeded: the alloc was stopped for running past its
	// group's max_run_duration.
	MaxRunDurationExceeded bool `json:",omitempty"`
	// SavedAt is when this record was written.
	SavedAt time.Time `json:",omitempty"`
}

// legacyTaskHandle is the handle agents before the driver interface
// wrote: a raw_exec supervisor's pids. It is read back as a raw_exec
// TaskHandle whose driver state is the same record.
type legacyTaskHandle struct {
	RunID  string
	Driver string
	Config *drivers.TaskConfig
}

// decodeTaskHandle reads a persisted task handle, including the legacy
// raw_exec form (its Config is filled in by the task runner).
func decodeTaskHandle(raw []byte) (*drivers.TaskHandle, error) {
	var probe legacyTaskHandle
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, err
	}
	if probe.Driver == "" && probe.RunID != "" {
		return &drivers.TaskHandle{Driver: DriverRawExec, Config: &drivers.TaskConfig{ID: probe.RunID},
			DriverState: append([]byte(nil), raw...)}, nil
	}
	h := new(drivers.TaskHandle)
	if err := json.Unmarshal(raw, h); err != nil {
		return nil, err
	}
	return h, nil
}

// restoredAlloc is one alloc read back from the state file.
type restoredAlloc struct {
	ID        string
	Alloc     *structs.Allocation
	Immutable *allocImmutableState
	Mutable   *allocMutableState
	Tasks     map[string]*restoredTask
	// Err is set when the alloc's state could not be read.
	Err error
}

// restoredTask is one task's state read back.
type restoredTask struct {
	State  *structs.TaskState
	Handle *drivers.TaskHandle
}

// stateDB is the agent's local state file.
type stateDB struct {
	db   *bolt.DB
	path string
}

// errStateLocked means another agent holds the state file.
var errStateLocked = errors.New("state file is locked by another agent")

// openStateDB opens (or creates) the state file at path. A file that cannot
// be opened as a database is moved aside and replaced by an empty one; the
// reason is returned in lost so that the agent reports the allocs it can
// no longer restore. Only a lock held by another process, or a file that
// cannot be created, is an error.
func openStateDB(path string) (s *stateDB, lost string, err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, "", fmt.Errorf("create state dir: %w", err)
	}
	db, err := openBolt(path)
	if errors.Is(err, bolt.ErrTimeout) {
		return nil, "", fmt.Errorf("open %s: %w", path, errStateLocked)
	}
	if err != nil {
		lost = fmt.Sprintf("local state file unreadable (%v)", err)
		aside := path + ".corrupt." + strconv.FormatInt(time.Now().UnixNano(), 10)
		if rerr := os.Rename(path, aside); rerr != nil {
			return nil, "", fmt.Errorf("move unreadable state file aside: %w", rerr)
		}
		db, err = openBolt(path)
		if err != nil {
			return nil, "", fmt.Errorf("create state file %s: %w", path, err)
		}
	}
	s = &stateDB{db: db, path: path}
	if err := s.init(); err != nil {
		db.Close()
		return nil, "", err
	}
	return s, lost, nil
}

// openBolt opens a bbolt file, turning a panic on a damaged file into an
// error.
func openBolt(path string) (db *bolt.DB, err error) {
	defer func() {
		if r := recover(); r != nil {
			db, err = nil, fmt.Errorf("damaged database: %v", r)
		}
	}()
	return bolt.Open(path, 0o600, &bolt.Options{Timeout: 2 * time.Second})
}

func (s *stateDB) init() error {
	return s.update(func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		if err := meta.Put(keySchema, stateSchemaVer); err != nil {
			return err
		}
		_, err = tx.CreateBucketIfNotExists(bucketAllocs)
		return err
	})
}

// Close closes the file.
func (s *stateDB) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close state file: %w", err)
	}
	return nil
}

// update runs fn in a write transaction, turning a panic from a damaged
// file into an error.
func (s *stateDB) update(fn func(tx *bolt.Tx) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("state file damaged: %v", r)
		}
	}()
	return s.db.Update(fn)
}

// allocBucket returns (creating) the bucket of allocID.
func allocBucket(tx *bolt.Tx, allocID string) (*bolt.Bucket, error) {
	allocs := tx.Bucket(bucketAllocs)
	if allocs == nil {
		return nil, errors.New("state file has no allocs bucket")
	}
	return allocs.CreateBucketIfNotExists([]byte(allocID))
}

func putJSON(b *bolt.Bucket, key []byte, v any) error {
	buf, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", key, err)
	}
	return b.Put(key, buf)
}

// PutAlloc writes the alloc (with its job) and, the first time, the
// immutable record.
func (s *stateDB) PutAlloc(alloc *structs.Allocation, immutable *allocImmutableState) error {
	err := s.update(func(tx *bolt.Tx) error {
		b, err := allocBucket(tx, alloc.ID)
		if err != nil {
			return err
		}
		if immutable != nil && b.Get(keyImmutable) == nil {
			if err := putJSON(b, keyImmutable, immutable); err != nil {
				return err
			}
		}
		return putJSON(b, keyAlloc, alloc)
	})
	if err != nil {
		return fmt.Errorf("persist alloc %s: %w", alloc.ID, err)
	}
	return nil
}

// PutAllocMutable writes the alloc's client-side state.
func (s *stateDB) PutAllocMutable(allocID string, m *allocMutableState) error {
	rec := *m
	rec.SavedAt = time.Now().UTC()
	err := s.update(func(tx *bolt.Tx) error {
		b, err := allocBucket(tx, allocID)
		if err != nil {
			return err
		}
		return putJSON(b, keyMutable, &rec)
	})
	if err != nil {
		return fmt.Errorf("persist alloc %s status: %w", allocID, err)
	}
	return nil
}

// PutTask writes a task's state and handle (nil removes the handle).
func (s *stateDB) PutTask(allocID, task string, st *structs.TaskState, h *drivers.TaskHandle) error {
	err := s.update(func(tx *bolt.Tx) error {
		b, err := allocBucket(tx, allocID)
		if err != nil {
			return err
		}
		tasks, err := b.CreateBucketIfNotExists(bucketTasks)
		if err != nil {
			return err
		}
		tb, err := tasks.CreateBucketIfNotExists([]byte(task))
		if err != nil {
			return err
		}
		if st != nil {
			if err := putJSON(tb, keyTaskState, st); err != nil {
				return err
			}
		}
		if h == nil {
			return tb.Delete(keyTaskHandle)
		}
		return putJSON(tb, keyTaskHandle, h)
	})
	if err != nil {
		return fmt.Errorf("persist alloc %s task %s: %w", allocID, task, err)
	}
	return nil
}

// DeleteAlloc removes everything stored for allocID.
func (s *stateDB) DeleteAlloc(allocID string) error {
	err := s.update(func(tx *bolt.Tx) error {
		allocs := tx.Bucket(bucketAllocs)
		if allocs == nil || allocs.Bucket([]byte(allocID)) == nil {
			return nil
		}
		return allocs.DeleteBucket([]byte(allocID))
	})
	if err != nil {
		return fmt.Errorf("delete alloc %s state: %w", allocID, err)
	}
	return nil
}

// LoadAllocs reads every stored alloc. An alloc whose records cannot be
// decoded comes back with Err set; a damaged file as a whole is an error.
func (s *stateDB) LoadAllocs() (out []*restoredAlloc, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("state file damaged: %v", r)
		}
	}()
	err = s.db.View(func(tx *bolt.Tx) error {
		allocs := tx.Bucket(bucketAllocs)
		if allocs == nil {
			return nil
		}
		return allocs.ForEachBucket(func(k []byte) error {
			out = append(out, loadAlloc(string(k), allocs.Bucket(k)))
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("read state file: %w", err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func loadAlloc(id string, b *bolt.Bucket) *restoredAlloc {
	ra := &restoredAlloc{ID: id, Tasks: map[string]*restoredTask{}}
	fail := func(format string, a ...any) *restoredAlloc {
		ra.Err = fmt.Errorf(format, a...)
		return ra
	}
	if raw := b.Get(keyMutable); raw != nil {
		ra.Mutable = new(allocMutableState)
		if err := json.Unmarshal(raw, ra.Mutable); err != nil {
			ra.Mutable = nil
			return fail("decode alloc status: %v", err)
		}
	}
	raw := b.Get(keyAlloc)
	if raw == nil {
		return fail("no alloc record")
	}
	ra.Alloc = new(structs.Allocation)
	if err := json.Unmarshal(raw, ra.Alloc); err != nil {
		ra.Alloc = nil
		return fail("decode alloc record: %v", err)
	}
	if raw := b.Get(keyImmutable); raw != nil {
		ra.Immutable = new(allocImmutableState)
		if err := json.Unmarshal(raw, ra.Immutable); err != nil {
			return fail("decode alloc immutable record: %v", err)
		}
	}
	tasks := b.Bucket(bucketTasks)
	if tasks == nil {
		return ra
	}
	err := tasks.ForEachBucket(func(k []byte) error {
		tb := tasks.Bucket(k)
		rt := &restoredTask{}
		if raw := tb.Get(keyTaskState); raw != nil {
			rt.State = new(structs.TaskState)
			if err := json.Unmarshal(raw, rt.State); err != nil {
				return fmt.Errorf("decode task %s state: %w", k, err)
			}
		}
		if raw := tb.Get(keyTaskHandle); raw != nil {
			h, err := decodeTaskHandle(raw)
			if err != nil {
				return fmt.Errorf("decode task %s handle: %w", k, err)
			}
			rt.Handle = h
		}
		ra.Tasks[string(k)] = rt
		return nil
	})
	if err != nil {
		return fail("%v", err)
	}
	return ra
}
