// Package embedded is drover's default state store: one bbolt file under
// the agent's data dir (bbolt: a maintained, pure-Go, single-file
// transactional key/value store used by etcd; one writer at a time, which
// gives plan commits the all-or-nothing, serialized semantics the
// invariants need without a server).
//
// Every write runs in one bbolt transaction (writes arriving during a
// commit share the next one: commit.go), bumps a global index (Nomad's
// Raft index stand-in) and stamps it on what it touched. Allocs are stored
// as CBOR (encoding.go), everything else as JSON; secondary indexes are
// key-only buckets. Each node's usage is a record kept by the writes that
// place or release allocs (usage.go), so neither an evaluation nor a
// commit reads other jobs' allocs. Decoded nodes (and active deployments)
// are cached, valid while the table index they were read at holds.
package embedded

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// Bucket names. Index buckets hold keys only.
var (
	bMeta            = []byte("meta")
	bJobs            = []byte("jobs")          // ns\0job → current *structs.Job
	bJobVersions     = []byte("job_versions")  // ns\0job\0%020d → *structs.Job
	bAllocs          = []byte("allocs")        // id → *structs.Allocation (Job stripped)
	bAllocsByJob     = []byte("allocs_by_job") // ns\0job\0id
	bAllocsByNode    = []byte("allocs_by_node")
	bAllocsByEval    = []byte("allocs_by_eval")
	bEvals           = []byte("evals")
	bEvalsByJob      = []byte("evals_by_job")
	bDeployments     = []byte("deployments")
	bDeploysByJob    = []byte("deployments_by_job")
	bNodes           = []byte("nodes")
	bNodeAssignment  = []byte("node_assignment")    // node id → uint64 index
	bNodeUsage       = []byte("node_usage")         // node id → usage record (usage.go)
	bEvalsByStatus   = []byte("evals_by_status")    // status\0id
	bAllocsTerminal  = []byte("allocs_terminal")    // id of each alloc that holds no resources
	bDeploysActive   = []byte("deployments_active") // id of each deployment not yet terminal
	bSubmissions     = []byte("job_submissions")    // ns\0job\0%020d → *structs.JobSubmission
	bNamespaces      = []byte("namespaces")         // name → *structs.Namespace
	bConfig          = []byte("config")             // "scheduler" → *structs.SchedulerConfiguration
	bACLTokens       = []byte("acl_tokens")         // accessor ID → *structs.ACLToken (acl.go)
	bACLTokensByHash = []byte("acl_tokens_by_hash") // secret hash → accessor ID
	bACLPolicies     = []byte("acl_policies")       // name → *structs.ACLPolicy
	bNodeSecrets     = []byte("node_secrets")       // node ID → hash of the node's secret
	// Service registrations (services.go): ns\0name\0id → registration;
	// the by-alloc and by-node indexes map alloc\0id and node\0id to
	// that key.
	bServices        = []byte("service_registrations")
	bServicesByAlloc = []byte("service_registrations_by_alloc")
	bServicesByNode  = []byte("service_registrations_by_node")
	// bJobsByType lists the system and sysbatch jobs: type\0ns\0id.
	bJobsByType = []byte("jobs_by_type")

	allBuckets = [][]byte{bMeta, bJobs, bJobVersions, bAllocs, bAllocsByJob, bAllocsByNode,
		bAllocsByEval, bEvals, bEvalsByJob, bDeployments, bDeploysByJob, bNodes, bNodeAssignment, bNodeUsage,
		bEvalsByStatus, bAllocsTerminal, bDeploysActive, bSubmissions, bNamespaces, bConfig,
		bACLTokens, bACLTokensByHash, bACLPolicies, bNodeSecrets, bServices, bServicesByAlloc, bServicesByNode, bJobsByType}

	keyIndex = []byte("index")
	// keyUsageBuilt is set once the node usage records exist (a file
	// written before them gets them built when opened).
	keyUsageBuilt = []byte("usage_built")
	// keyEvalStatusBuilt is set once evals_by_status is complete.
	keyEvalStatusBuilt = []byte("evals_by_status_built")
	// keyTerminalBuilt is set once allocs_terminal is complete.
	keyTerminalBuilt = []byte("allocs_terminal_built")
	// keyActiveBuilt is set once deployments_active is complete.
	keyActiveBuilt = []byte("deployments_active_built")
	// keyJobTypesBuilt is set once jobs_by_type is complete.
	keyJobTypesBuilt = []byte("jobs_by_type_built")
)

// maxTrackedVersions is how many versions of a job are kept (Nomad keeps 6);
// older ones go unless an allocation still runs them.
const maxTrackedVersions = 6

// Store is the bbolt-backed storage.Store.
type Store struct {
	db *bolt.DB

	mu       sync.Mutex
	watchers map[string]chan struct{}

	// crash, when set (tests), runs just before a write transaction
	// commits; an error it returns aborts the transaction, as a crash
	// before the commit would.
	crash func() error
	// afterCommit, when set (Options.CrashPoint), runs after each write
	// is durable; an error it returns is handed to the caller instead of
	// the answer.
	afterCommit func(point string) error

	nodeCache   nodeCache
	activeCache activeCache
	commits     committer
}

var _ storage.Store = (*Store)(nil)
var _ storage.Watcher = (*Store)(nil)

// Open opens (creating if needed) the state file at path. It fails if
// another process holds the file (after a 5 s wait).
func Open(path string) (*Store, error) {
	return OpenWith(path, Options{})
}

// Options tune a store beyond Open's defaults.
type Options struct {
	// NoSync skips the fsync at each commit: a crash of the machine (not
	// of the process) may lose the last commits. For benchmarks that
	// measure computation rather than the disk, and throwaway state;
	// never for an agent's state.
	NoSync bool
	// CrashPoint is a test hook, nil (off) unless a test sets it: it is
	// called at the named points of every write's commit path
	// (CrashBeforeCommit, CrashAfterCommit), and an error it returns is a
	// crash there. Before the commit the write's transaction is aborted
	// (bbolt rolls back every put of it, so this stands for a crash
	// between any two of them); after the commit the write is durable and
	// the caller gets the error instead of the answer, as a process
	// killed between its commit and its reply. The chaos suite uses it.
	CrashPoint func(point string) error
}

// The commit path's crash points (Options.CrashPoint).
const (
	// CrashBeforeCommit is inside a write's transaction, after all of its
	// puts and before the commit.
	CrashBeforeCommit = "before-commit"
	// CrashAfterCommit is after the write is durable, before its caller
	// is answered.
	CrashAfterCommit = "after-commit"
)

// OpenWith is Open with options.
func OpenWith(path string, opts Options) (*Store, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{
		NoSync:  opts.NoSync,
		Timeout: 5 * time.Second,
		// Map 1 GiB of address space from the start (not memory): a write
		// that grows the file then never waits for readers to let go of
		// the old mapping, so evaluations read while plans commit.
		InitialMmapSize: 1 << 30,
		// The free-page list kept in a hash map and not written at each
		// commit (it is rebuilt when the file is opened), as etcd does:
		// large files commit without rewriting a large list each time.
		FreelistType:   bolt.FreelistMapType,
		NoFreelistSync: true,
	})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("open state file %s: it is locked by another process (is a drover agent already running with this data dir?)", path)
	}
	if err != nil {
		return nil, fmt.Errorf("open state file %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		// Index 1 stands for "nothing written yet" (API readers report at
		// least 1, as Nomad's clients need), so the first write is 2 and a
		// blocking query at index 1 wakes on it.
		meta := tx.Bucket(bMeta)
		if meta.Get(keyIndex) == nil {
			if err := meta.Put(keyIndex, putUint(1)); err != nil {
				return err
			}
		}
		if meta.Get(keyUsageBuilt) == nil {
			if err := rebuildUsage(tx); err != nil {
				return err
			}
		}
		if meta.Get(keyEvalStatusBuilt) == nil {
			if err := buildEvalStatusIndex(tx); err != nil {
				return err
			}
		}
		if meta.Get(keyTerminalBuilt) == nil {
			if err := buildTerminalIndex(tx); err != nil {
				return err
			}
		}
		if meta.Get(keyActiveBuilt) == nil {
			if err := buildActiveDeploymentIndex(tx); err != nil {
				return err
			}
		}
		if meta.Get(keyJobTypesBuilt) == nil {
			return buildJobTypeIndex(tx)
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("create buckets in %s: %w", path, err)
	}
	s := &Store{db: db, watchers: map[string]chan struct{}{}, afterCommit: opts.CrashPoint}
	if opts.CrashPoint != nil {
		s.crash = func() error { return opts.CrashPoint(CrashBeforeCommit) }
	}
	return s, nil
}

// Close closes the file.
func (s *Store) Close() error { return s.db.Close() }

// WatchTables implements storage.Watcher.
func (s *Store) WatchTables(tables ...string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(tables) == 1 {
		return s.watchLocked(tables[0])
	}
	out := make(chan struct{})
	chans := make([]chan struct{}, len(tables))
	for i, t := range tables {
		chans[i] = s.watchLocked(t)
	}
	go func() {
		// Close out when any table's channel closes. Each table channel
		// is closed at its next write, so this goroutine always ends.
		cases := make(chan struct{}, len(chans))
		for _, c := range chans {
			go func(c chan struct{}) { <-c; cases <- struct{}{} }(c)
		}
		<-cases
		close(out)
	}()
	return out
}

func (s *Store) watchLocked(table string) chan struct{} {
	ch, ok := s.watchers[table]
	if !ok {
		ch = make(chan struct{})
		s.watchers[table] = ch
	}
	return ch
}

func (s *Store) notify(tables map[string]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for t := range tables {
		if ch, ok := s.watchers[t]; ok {
			close(ch)
			delete(s.watchers, t)
		}
	}
}

// wtx is one write transaction: the new index and what it touched.
type wtx struct {
	store  *Store
	tx     *bolt.Tx
	index  uint64
	tables map[string]bool
	jobs   map[string][2]string // jobs whose status to refresh
	usage  map[string]*usageRec // node usage records changed (usage.go)
	nodes  map[string]*structs.Node
}

// node returns a node as stored (shared: never modify it), or nil: from
// the store's node cache when it is current for this transaction, else
// decoded once per transaction. Plan commits read the node of every
// placement.
func (w *wtx) node(id string) (*structs.Node, error) {
	if n, ok := w.nodes[id]; ok {
		return n, nil
	}
	if n, ok := w.store.cachedNode(w.tx, id); ok {
		return n, nil
	}
	n, err := getJSON[structs.Node](w.tx.Bucket(bNodes), []byte(id))
	if err != nil {
		return nil, err
	}
	if w.nodes == nil {
		w.nodes = map[string]*structs.Node{}
	}
	w.nodes[id] = n
	return n, nil
}

// write runs fn in a write transaction with a fresh index and notifies
// watchers of the tables it touched once the transaction is durable.
// Concurrent writes share transactions (group commit, commit.go): fn may
// run more than once, each time on a fresh wtx, and only the run that
// commits counts.
func (s *Store) write(ctx context.Context, fn func(w *wtx) error) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	w, err := s.groupCommit(fn)
	if err != nil {
		return 0, err
	}
	s.notify(w.tables)
	if s.afterCommit != nil {
		if err := s.afterCommit(CrashAfterCommit); err != nil {
			return 0, err
		}
	}
	return w.index, nil
}

// runWrite runs one write's fn inside tx, as if it had tx alone: a fresh
// index after the writes before it in tx, its usage records flushed, the
// statuses of the jobs it touched refreshed, the indexes stamped.
func (s *Store) runWrite(tx *bolt.Tx, fn func(w *wtx) error) (*wtx, error) {
	meta := tx.Bucket(bMeta)
	w := &wtx{store: s, tx: tx, index: getUint(meta.Get(keyIndex)) + 1, tables: map[string]bool{},
		jobs: map[string][2]string{}, usage: map[string]*usageRec{}}
	if err := fn(w); err != nil {
		return nil, err
	}
	if err := w.flushUsage(); err != nil {
		return nil, err
	}
	if s.crash != nil {
		if err := s.crash(); err != nil {
			return nil, err
		}
	}
	for ns := range w.jobs {
		j := w.jobs[ns]
		if err := w.refreshJobStatus(j[0], j[1]); err != nil {
			return nil, err
		}
	}
	if len(w.tables) == 0 {
		return w, nil
	}
	if err := meta.Put(keyIndex, putUint(w.index)); err != nil {
		return nil, err
	}
	for t := range w.tables {
		if err := meta.Put([]byte("table/"+t), putUint(w.index)); err != nil {
			return nil, err
		}
	}
	return w, nil
}

func (s *Store) read(ctx context.Context, fn func(tx *bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.db.View(fn)
}

// Index implements storage.Store.
func (s *Store) Index(ctx context.Context, table string) (uint64, error) {
	var idx uint64
	err := s.read(ctx, func(tx *bolt.Tx) error {
		idx = getUint(tx.Bucket(bMeta).Get([]byte("table/" + table)))
		return nil
	})
	return idx, err
}

func (w *wtx) touch(tables ...string) {
	for _, t := range tables {
		w.tables[t] = true
	}
}

func (w *wtx) touchJob(ns, id string) {
	w.jobs[ns+"\x00"+id] = [2]string{ns, id}
}

// Keys and encodings.

func key(parts ...string) []byte {
	var b bytes.Buffer
	for i, p := range parts {
		if i > 0 {
			b.WriteByte(0)
		}
		b.WriteString(p)
	}
	return b.Bytes()
}

func prefixKey(parts ...string) []byte {
	return append(key(parts...), 0)
}

func versionKey(ns, id string, v uint64) []byte {
	return key(ns, id, fmt.Sprintf("%020d", v))
}

func putUint(v uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	return b[:]
}

func getUint(b []byte) uint64 {
	if len(b) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(b)
}

func putJSON(b *bolt.Bucket, k []byte, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", k, err)
	}
	return b.Put(k, data)
}

func getJSON[T any](b *bolt.Bucket, k []byte) (*T, error) {
	data := b.Get(k)
	if data == nil {
		return nil, nil
	}
	out := new(T)
	if err := json.Unmarshal(data, out); err != nil {
		return nil, fmt.Errorf("decode %q: %w", k, err)
	}
	return out, nil
}

// getRequired is getJSON for an object that must exist: a missing one is
// the error notFound builds (a storage.ErrNotFound naming the object).
func getRequired[T any](b *bolt.Bucket, k []byte, notFound func() error) (*T, error) {
	v, err := getJSON[T](b, k)
	if err != nil {
		return nil, err
	}
	if v == nil {
		return nil, notFound()
	}
	return v, nil
}

// lastPart returns what follows the last NUL of an index key.
func lastPart(k []byte) string {
	i := bytes.LastIndexByte(k, 0)
	return string(k[i+1:])
}

// scanIndex calls fn with the last part of each key under prefix.
func scanIndex(b *bolt.Bucket, prefix []byte, fn func(id string) error) error {
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		if err := fn(lastPart(k)); err != nil {
			return err
		}
	}
	return nil
}
