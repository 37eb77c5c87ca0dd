// Package dynamodb is drover's state store on DynamoDB (the AWS home): one
// table, keys designed so that a job's evaluation reads one partition with
// strongly consistent queries and a node agent can be confined to its own
// node's items by IAM (dynamodb:LeadingKeys). Plans commit with
// TransactWriteItems in atomic chunks guarded by the job version and node
// capacity conditions. README.md beside this file is the data design: keys,
// indexes, access patterns, item sizes and costs.
package dynamodb

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"go.uber.org/zap"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// DefaultTable is the table name when Config.Table is empty.
const DefaultTable = "drover"

// Limits of one transaction (design §5), with a margin.
const (
	// MaxTransactActions is DynamoDB's limit of actions per transaction.
	MaxTransactActions = 100
	// MaxTransactBytes is DynamoDB's limit of a transaction's size (4 MB).
	MaxTransactBytes = 4 << 20
	// chunkBytes is what the builder packs into one chunk (bytes).
	chunkBytes = 3_500_000
)

// Config configures a Store.
type Config struct {
	// Table is the table name (default "drover").
	Table string
	// Logger receives the store's logs (nil: none).
	Logger *zap.Logger
	// ChunkActions caps the actions of one plan chunk (default and maximum
	// 99: DynamoDB's 100 with a margin). Tests lower it.
	ChunkActions int
	// Retries bounds the retries of one transaction after a transaction
	// conflict or throttling (default 6).
	Retries int
	// AfterChunk, when set, runs after chunk k (1-based) of a plan commit
	// has landed; an error it returns aborts the commit there, as a crash
	// would. Tests use it to inject failures between chunks.
	AfterChunk func(plan *structs.Plan, chunk int) error
}

// Store is storage.Store on DynamoDB.
type Store struct {
	db    *dynamodb.Client
	table string
	cfg   Config
	log   *zap.Logger
	rnd   *rand.Rand
	rndMu sync.Mutex
	clock hlc
}

var _ storage.Store = (*Store)(nil)

// NewClient returns a DynamoDB client for cfg. When an endpoint other than
// AWS's is configured (kumo, LocalStack), response CRC32 validation is off:
// local endpoints do not all compute it (design §6).
func NewClient(cfg aws.Config, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	local := cfg.BaseEndpoint != nil && *cfg.BaseEndpoint != ""
	fns := append([]func(*dynamodb.Options){func(o *dynamodb.Options) {
		if local {
			o.DisableValidateResponseChecksum = true
		}
	}}, optFns...)
	return dynamodb.NewFromConfig(cfg, fns...)
}

// New returns a Store on an existing table (see CreateTable).
func New(client *dynamodb.Client, cfg Config) *Store {
	if cfg.Table == "" {
		cfg.Table = DefaultTable
	}
	if cfg.ChunkActions <= 0 || cfg.ChunkActions > MaxTransactActions-1 {
		cfg.ChunkActions = MaxTransactActions - 1
	}
	if cfg.Retries <= 0 {
		cfg.Retries = 6
	}
	log := cfg.Logger
	if log == nil {
		log = zap.NewNop()
	}
	return &Store{db: client, table: cfg.Table, cfg: cfg, log: log,
		rnd: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))}
}

// Close implements storage.Store; the client needs no closing.
func (s *Store) Close() error { return nil }

// Client returns the DynamoDB client.
func (s *Store) Client() *dynamodb.Client { return s.db }

// Table returns the table name.
func (s *Store) Table() string { return s.table }

// Errors.

// ErrThrottled is returned (wrapped in a *RetryableError) when DynamoDB
// kept throttling after the store's back-off.
var ErrThrottled = errors.New("dynamodb: throttled")

// ErrTransactionConflict is returned (wrapped in a *RetryableError) when a
// transaction kept conflicting with other in-flight transactions after the
// store's retries.
var ErrTransactionConflict = errors.New("dynamodb: transaction conflict")

// RetryableError is a transient failure: errors.Is(err,
// storage.ErrRetryable) holds, and errors.Is with ErrThrottled or
// ErrTransactionConflict tells which.
type RetryableError struct {
	Kind error // ErrThrottled or ErrTransactionConflict
	Err  error // the last error from DynamoDB
}

// Error implements error.
func (e *RetryableError) Error() string { return fmt.Sprintf("%v: %v", e.Kind, e.Err) }

// Is matches storage.ErrRetryable and the kind.
func (e *RetryableError) Is(target error) bool {
	return target == storage.ErrRetryable || target == e.Kind
}

// Unwrap returns DynamoDB's error.
func (e *RetryableError) Unwrap() error { return e.Err }

// failure kinds of one DynamoDB call.
type failure int

const (
	failNone failure = iota
	failCondition
	failTxConflict
	failThrottle
	failOther
)

// classify tells the three failure kinds apart (design §5). For a
// cancelled transaction it also returns the index of the first action
// whose condition failed (-1 if none).
func classify(err error) (failure, int) {
	if err == nil {
		return failNone, -1
	}
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		kind, first := failOther, -1
		for i, r := range tce.CancellationReasons {
			switch aws.ToString(r.Code) {
			case "ConditionalCheckFailed":
				if first < 0 {
					first = i
				}
				kind = failCondition
			case "TransactionConflict":
				if kind != failCondition {
					kind = failTxConflict
				}
			case "ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded":
				if kind != failCondition && kind != failTxConflict {
					kind = failThrottle
				}
			}
		}
		if kind == failOther && strings.Contains(aws.ToString(tce.Message), "ConditionalCheckFailed") {
			kind = failCondition
		}
		return kind, first
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode() {
		case "ConditionalCheckFailedException":
			return failCondition, -1
		case "TransactionConflictException", "TransactionInProgressException":
			return failTxConflict, -1
		case "ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded", "Throttling":
			return failThrottle, -1
		}
	}
	return failOther, -1
}

// backoff sleeps before retry attempt n (0-based) of a failure kind.
func (s *Store) backoff(ctx context.Context, kind failure, n int) error {
	base := 10 * time.Millisecond
	if kind == failThrottle {
		base = 50 * time.Millisecond
	}
	d := base << n
	s.rndMu.Lock()
	d = d/2 + time.Duration(s.rnd.Int64N(int64(d)))
	s.rndMu.Unlock()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// action is one TransactWriteItems action with what it is for.
type action struct {
	item types.TransactWriteItem
	desc string // names the item and its condition, for conflict reasons
	size int    // approximate bytes
}

// transact runs one transaction: the token is derived from the actions'
// content, so retrying the same chunk is idempotent and a different chunk
// never reuses a token. A failed condition is a *storage.ConflictError;
// transaction conflicts and throttling are retried, then returned as a
// *RetryableError.
func (s *Store) transact(ctx context.Context, acts []action) error {
	items := make([]types.TransactWriteItem, len(acts))
	for i, a := range acts {
		items[i] = a.item
	}
	token := requestToken(items)
	in := &dynamodb.TransactWriteItemsInput{TransactItems: items, ClientRequestToken: aws.String(token)}
	var last error
	for attempt := 0; ; attempt++ {
		_, err := s.db.TransactWriteItems(ctx, in)
		kind, idx := classify(err)
		switch kind {
		case failNone:
			return nil
		case failCondition:
			reason := "a condition failed"
			if idx >= 0 && idx < len(acts) {
				reason = acts[idx].desc
			}
			return storage.Conflictf("%s", reason)
		case failOther:
			return fmt.Errorf("transact %d actions: %w", len(acts), err)
		}
		last = err
		if attempt+1 >= s.cfg.Retries {
			k := ErrTransactionConflict
			if kind == failThrottle {
				k = ErrThrottled
			}
			return &RetryableError{Kind: k, Err: last}
		}
		s.log.Debug("transaction retried", zap.Int("attempt", attempt+1), zap.Error(err))
		if err := s.backoff(ctx, kind, attempt); err != nil {
			return err
		}
	}
}

// requestToken is a ClientRequestToken (at most 36 characters) derived
// from the transaction's content.
func requestToken(items []types.TransactWriteItem) string {
	b, err := json.Marshal(items)
	if err != nil {
		panic(fmt.Sprintf("encode transaction: %v", err))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:18])
}

// wrapErr classifies a non-transactional call's error.
func wrapErr(err error, what string) error {
	if err == nil {
		return nil
	}
	switch kind, _ := classify(err); kind {
	case failCondition:
		return storage.Conflictf("%s: %v", what, err)
	case failTxConflict:
		return &RetryableError{Kind: ErrTransactionConflict, Err: fmt.Errorf("%s: %w", what, err)}
	case failThrottle:
		return &RetryableError{Kind: ErrThrottled, Err: fmt.Errorf("%s: %w", what, err)}
	}
	return fmt.Errorf("%s: %w", what, err)
}

// Attribute values.

type item = map[string]types.AttributeValue

func avS(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func avN(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}
func avU(v uint64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatUint(v, 10)}
}
func avB(v []byte) types.AttributeValue  { return &types.AttributeValueMemberB{Value: v} }
func avBool(v bool) types.AttributeValue { return &types.AttributeValueMemberBOOL{Value: v} }

func getS(it item, k string) string {
	if v, ok := it[k].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func getN(it item, k string) int64 {
	if v, ok := it[k].(*types.AttributeValueMemberN); ok {
		n, _ := strconv.ParseInt(v.Value, 10, 64)
		return n
	}
	return 0
}

func getU(it item, k string) uint64 {
	if v, ok := it[k].(*types.AttributeValueMemberN); ok {
		n, _ := strconv.ParseUint(v.Value, 10, 64)
		return n
	}
	return 0
}

func getBool(it item, k string) bool {
	if v, ok := it[k].(*types.AttributeValueMemberBOOL); ok {
		return v.Value
	}
	return false
}

func getB(it item, k string) []byte {
	if v, ok := it[k].(*types.AttributeValueMemberB); ok {
		return v.Value
	}
	return nil
}

func has(it item, k string) bool { _, ok := it[k]; return ok }

func key(pk, sk string) item { return item{"PK": avS(pk), "SK": avS(sk)} }

func keyString(it item) string { return getS(it, "PK") + "\x00" + getS(it, "SK") }

// itemSize is an item's size as DynamoDB counts it (for the 400 KB item
// and 4 MB transaction limits and for capacity units): the UTF-8 length
// of each attribute name plus its value's size.
func itemSize(it item) int {
	n := 0
	for k, v := range it {
		n += len(k) + valueSize(v)
	}
	return n
}

// valueSize is one attribute value's size by DynamoDB's rules: strings
// and binaries their length; numbers 1 byte per two significant digits
// plus 1; booleans and nulls 1; lists and maps 3 bytes plus 1 per element
// plus the elements (map keys included); sets the sum of their members.
func valueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return numberSize(v.Value)
	case *types.AttributeValueMemberSS:
		n := 0
		for _, s := range v.Value {
			n += len(s)
		}
		return n
	case *types.AttributeValueMemberBS:
		n := 0
		for _, b := range v.Value {
			n += len(b)
		}
		return n
	case *types.AttributeValueMemberNS:
		n := 0
		for _, s := range v.Value {
			n += numberSize(s)
		}
		return n
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + valueSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += 1 + len(k) + valueSize(e)
		}
		return n
	}
	return 1 // BOOL, NULL
}

// numberSize counts a number's significant digits (leading and trailing
// zeros trimmed): 1 byte per two, plus 1.
func numberSize(s string) int {
	digits := strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, strings.SplitN(strings.ToLower(s), "e", 2)[0])
	digits = strings.Trim(digits, "0")
	return (len(digits)+1)/2 + 1
}

// Encoding of the large values: gzip-compressed JSON.

var gzPool = sync.Pool{New: func() any { w, _ := gzip.NewWriterLevel(io.Discard, gzip.BestSpeed); return w }}

func encode(v any) []byte {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("encode %T: %v", v, err))
	}
	var buf bytes.Buffer
	zw := gzPool.Get().(*gzip.Writer)
	zw.Reset(&buf)
	_, _ = zw.Write(raw)
	_ = zw.Close()
	gzPool.Put(zw)
	return buf.Bytes()
}

func decode[T any](b []byte) (*T, error) {
	if b == nil {
		return nil, errors.New("missing value attribute")
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("decode %T: %w", new(T), err)
	}
	out := new(T)
	if err := json.NewDecoder(zr).Decode(out); err != nil {
		return nil, fmt.Errorf("decode %T: %w", out, err)
	}
	return out, nil
}

// Keys.

func jobPK(ns, id string) string   { return "JOB#" + ns + "#" + id }
func nodePK(id string) string      { return "NODE#" + id }
func versionSK(v uint64) string    { return fmt.Sprintf("VER#%020d", v) }
func allocSK(id string) string     { return "ALLOC#" + id }
func evalSK(id string) string      { return "EVAL#" + id }
func deploySK(id string) string    { return "DEPLOY#" + id }
func evalPtrPK(id string) string   { return "EVAL#" + id }
func deployPtrPK(id string) string { return "DEPLOY#" + id }

const (
	skMeta      = "META"
	skIdx       = "IDX"
	skHB        = "HB"
	skEvalPtr   = "EVAL"
	skDeployPtr = "DEPLOY"
)

// idShard is the gsi1 shard of an ID: its first hex digit, "x" otherwise.
func idShard(id string) string {
	if id == "" {
		return "x"
	}
	c := id[0]
	switch {
	case c >= '0' && c <= '9', c >= 'a' && c <= 'f':
		return string(c)
	case c >= 'A' && c <= 'F':
		return string(c + 'a' - 'A')
	}
	return "x"
}

var allShards = []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "a", "b", "c", "d", "e", "f", "x"}

// shardsFor returns the gsi1 shards that can hold IDs starting with prefix.
func shardsFor(prefix string) []string {
	if prefix == "" {
		return allShards
	}
	return []string{idShard(prefix)}
}

// evalShard is the gsi2 shard (0..3) of an eval ID.
func evalShard(id string) string {
	h := sha256.Sum256([]byte(id))
	return strconv.Itoa(int(h[0] % 4))
}

// Reads.

func (s *Store) get(ctx context.Context, pk, sk string, consistent bool) (item, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: key(pk, sk), ConsistentRead: aws.Bool(consistent)})
	if err != nil {
		return nil, wrapErr(err, fmt.Sprintf("get %s/%s", pk, sk))
	}
	if len(out.Item) == 0 {
		return nil, nil
	}
	s.observeItems(out.Item)
	return out.Item, nil
}

// queryPrefix reads every item of partition pk whose SK starts with prefix
// (every item when prefix is empty), strongly consistent, in SK order.
func (s *Store) queryPrefix(ctx context.Context, pk, prefix string, forward bool) ([]item, error) {
	return s.query(ctx, prefixQuery(s.table, pk, prefix, forward))
}

// prefixQuery is the Query of partition pk's items whose SK starts with
// prefix. DynamoDB refuses an empty string as a key attribute value, also
// in begins_with, so an empty prefix queries the whole partition.
func prefixQuery(table, pk, prefix string, forward bool) *dynamodb.QueryInput {
	in := &dynamodb.QueryInput{
		TableName: &table, ConsistentRead: aws.Bool(true), ScanIndexForward: aws.Bool(forward),
		KeyConditionExpression:    aws.String("PK = :pk"),
		ExpressionAttributeValues: item{":pk": avS(pk)},
	}
	if prefix != "" {
		in.KeyConditionExpression = aws.String("PK = :pk AND begins_with(SK, :p)")
		in.ExpressionAttributeValues[":p"] = avS(prefix)
	}
	return in
}

func (s *Store) query(ctx context.Context, in *dynamodb.QueryInput) ([]item, error) {
	var out []item
	p := dynamodb.NewQueryPaginator(s.db, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, wrapErr(err, "query")
		}
		s.observeItems(page.Items...)
		out = append(out, page.Items...)
	}
	return out, nil
}

// queryIndex reads the keys a GSI lists under pk, optionally with SK
// prefix.
func (s *Store) queryIndex(ctx context.Context, index, pkAttr, skAttr, pk, prefix string) ([]item, error) {
	in := &dynamodb.QueryInput{TableName: &s.table, IndexName: aws.String(index),
		ExpressionAttributeNames: map[string]string{"#pk": pkAttr}, ExpressionAttributeValues: item{":pk": avS(pk)}}
	if prefix != "" {
		in.KeyConditionExpression = aws.String("#pk = :pk AND begins_with(#sk, :p)")
		in.ExpressionAttributeNames["#sk"] = skAttr
		in.ExpressionAttributeValues[":p"] = avS(prefix)
	} else {
		in.KeyConditionExpression = aws.String("#pk = :pk")
	}
	return s.query(ctx, in)
}

// batchGet reads items by key, strongly consistent; missing ones are
// absent from the result, which is keyed by keyString.
func (s *Store) batchGet(ctx context.Context, keys []item) (map[string]item, error) {
	return s.batchGetWith(ctx, keys, true)
}

// batchGetWith is batchGet with the read's consistency (an eventually
// consistent read of an item under 4 KB is half a read unit).
func (s *Store) batchGetWith(ctx context.Context, keys []item, consistent bool) (map[string]item, error) {
	out := make(map[string]item, len(keys))
	seen := map[string]bool{}
	var uniq []item
	for _, k := range keys {
		ks := keyString(k)
		if !seen[ks] {
			seen[ks] = true
			uniq = append(uniq, key(getS(k, "PK"), getS(k, "SK")))
		}
	}
	for len(uniq) > 0 {
		n := min(len(uniq), 100)
		req := map[string]types.KeysAndAttributes{s.table: {Keys: uniq[:n], ConsistentRead: aws.Bool(consistent)}}
		uniq = uniq[n:]
		for attempt := 0; len(req) > 0; attempt++ {
			res, err := s.db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: req})
			if err != nil {
				return nil, wrapErr(err, "batch get")
			}
			for _, it := range res.Responses[s.table] {
				s.observeItems(it)
				out[keyString(it)] = it
			}
			req = res.UnprocessedKeys
			if len(req) > 0 {
				if err := s.backoff(ctx, failThrottle, min(attempt, 5)); err != nil {
					return nil, err
				}
			}
		}
	}
	return out, nil
}

// withConflictRetry runs a read-modify-write fn again (fresh index, fresh
// reads) when its conditional write lost a race, up to 8 times.
func withConflictRetry[T any](ctx context.Context, s *Store, fn func() (T, error)) (T, error) {
	var zero T
	var err error
	for attempt := 0; attempt < 8; attempt++ {
		var v T
		v, err = fn()
		if err == nil || !errors.Is(err, errRace) {
			return v, err
		}
		if berr := s.backoff(ctx, failTxConflict, min(attempt, 4)); berr != nil {
			return zero, berr
		}
	}
	return zero, fmt.Errorf("gave up after repeated concurrent writes: %w", err)
}

// errRace marks a conditional write that failed only because a concurrent
// writer changed the item between our read and our write: the operation
// is retried from the read.
var errRace = errors.New("concurrent write")

// raceOnConflict turns a conflict from a read-modify-write's own guard into
// errRace.
func raceOnConflict(err error) error {
	if errors.Is(err, storage.ErrConflict) {
		return fmt.Errorf("%w: %v", errRace, err)
	}
	return err
}

// padNanos renders unix nanoseconds sortably.
func padNanos(ns int64) string { return fmt.Sprintf("%020d", ns) }
