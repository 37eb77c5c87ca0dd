package awstest

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
)

// On-demand DynamoDB prices in us-east-1 (USD per million request units),
// as AWS lists them since 1 November 2024 (before: 1.25 and 0.25).
const (
	PricePerMillionWRU = 0.625
	PricePerMillionRRU = 0.125
)

// Units are DynamoDB request units.
type Units struct {
	Read, Write float64
	Calls       int
}

// Dollars is what units cost on demand.
func (u Units) Dollars() float64 {
	return u.Read*PricePerMillionRRU/1e6 + u.Write*PricePerMillionWRU/1e6
}

// Add returns u + o.
func (u Units) Add(o Units) Units {
	return Units{Read: u.Read + o.Read, Write: u.Write + o.Write, Calls: u.Calls + o.Calls}
}

// Sub returns u - o.
func (u Units) Sub(o Units) Units {
	return Units{Read: u.Read - o.Read, Write: u.Write - o.Write, Calls: u.Calls - o.Calls}
}

func (u Units) String() string {
	return fmt.Sprintf("%.1f RRU + %.1f WRU in %d calls", u.Read, u.Write, u.Calls)
}

// Meter is SDK middleware that counts the request units DynamoDB charges
// for each call. The emulators report no consumed capacity (kumo) or a
// fixed one (moto), so the units are computed from the items the calls
// carry and return, by DynamoDB's rules: a read of up to 4 KB is 1 unit
// strongly consistent and 0.5 eventually consistent (a query's items are
// summed before rounding; GSI reads are eventual), a write 1 unit per KB
// of the item rounded up (2 in a transaction), and each GSI entry a write
// adds or removes 1 unit. Update sizes count what the request carries, at
// least 1 KB. It also asks for ReturnConsumedCapacity=TOTAL, and where the
// endpoint answers with it (DynamoDB itself) it keeps those units apart as
// reported.
type Meter struct {
	// GSIKeys are the partition-key attributes of the table's GSIs.
	GSIKeys []string

	mu       sync.Mutex
	total    Units
	reported Units
	byOp     map[string]Units
}

// NewMeter returns a meter for a table whose GSIs have these partition
// keys.
func NewMeter(gsiKeys ...string) *Meter {
	return &Meter{GSIKeys: gsiKeys, byOp: map[string]Units{}}
}

// Total returns what was counted so far.
func (m *Meter) Total() Units {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.total
}

// Reported returns the consumed capacity DynamoDB reported (zero on the
// emulators).
func (m *Meter) Reported() Units {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reported
}

// ByOperation lists the units per DynamoDB operation, sorted.
func (m *Meter) ByOperation() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ops []string
	for op, u := range m.byOp {
		ops = append(ops, fmt.Sprintf("%s %s", op, u))
	}
	sort.Strings(ops)
	return strings.Join(ops, "; ")
}

// Measure returns the units fn's calls used.
func (m *Meter) Measure(fn func()) Units {
	before := m.Total()
	fn()
	return m.Total().Sub(before)
}

// Apply adds the meter to a DynamoDB client's options.
func (m *Meter) Apply(o *awsddb.Options) {
	o.APIOptions = append(o.APIOptions, m.stack)
}

// ApplyConfig adds the meter to every client made from cfg (it counts
// DynamoDB calls only).
func (m *Meter) ApplyConfig(cfg *aws.Config) {
	cfg.APIOptions = append(cfg.APIOptions, m.stack)
}

func (m *Meter) stack(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("drover-meter", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
		askCapacity(in.Parameters)
		out, md, err := next.HandleInitialize(ctx, in)
		if err == nil {
			m.count(in.Parameters, out.Result)
		}
		return out, md, err
	}), middleware.After)
}

func askCapacity(p any) {
	t := types.ReturnConsumedCapacityTotal
	switch in := p.(type) {
	case *awsddb.GetItemInput:
		in.ReturnConsumedCapacity = t
	case *awsddb.BatchGetItemInput:
		in.ReturnConsumedCapacity = t
	case *awsddb.QueryInput:
		in.ReturnConsumedCapacity = t
	case *awsddb.PutItemInput:
		in.ReturnConsumedCapacity = t
	case *awsddb.UpdateItemInput:
		in.ReturnConsumedCapacity = t
	case *awsddb.DeleteItemInput:
		in.ReturnConsumedCapacity = t
	case *awsddb.TransactWriteItemsInput:
		in.ReturnConsumedCapacity = t
	case *awsddb.BatchWriteItemInput:
		in.ReturnConsumedCapacity = t
	}
}

func (m *Meter) count(p, result any) {
	var u Units
	var rep []types.ConsumedCapacity
	readUnits := func(bytes int, consistent bool) float64 {
		n := math.Max(1, math.Ceil(float64(bytes)/4096))
		if !consistent {
			n /= 2
		}
		return n
	}
	op := ""
	switch in := p.(type) {
	case *awsddb.GetItemInput:
		op = "GetItem"
		out := result.(*awsddb.GetItemOutput)
		u.Read = readUnits(ItemBytes(out.Item), aws.ToBool(in.ConsistentRead))
		rep = one(out.ConsumedCapacity)
	case *awsddb.BatchGetItemInput:
		op = "BatchGetItem"
		out := result.(*awsddb.BatchGetItemOutput)
		for table, ka := range in.RequestItems {
			got := out.Responses[table]
			for _, it := range got {
				u.Read += readUnits(ItemBytes(it), aws.ToBool(ka.ConsistentRead))
			}
			missing := len(ka.Keys) - len(got) - len(out.UnprocessedKeys[table].Keys)
			u.Read += float64(max(missing, 0)) * readUnits(0, aws.ToBool(ka.ConsistentRead))
		}
		rep = out.ConsumedCapacity
	case *awsddb.QueryInput:
		op = "Query"
		out := result.(*awsddb.QueryOutput)
		n := 0
		for _, it := range out.Items {
			n += ItemBytes(it)
		}
		u.Read = readUnits(n, aws.ToBool(in.ConsistentRead) && in.IndexName == nil)
		rep = one(out.ConsumedCapacity)
	case *awsddb.PutItemInput:
		op = "PutItem"
		u.Write = writeUnits(ItemBytes(in.Item)) + m.gsiWrites(in.Item)
		rep = one(result.(*awsddb.PutItemOutput).ConsumedCapacity)
	case *awsddb.UpdateItemInput:
		op = "UpdateItem"
		u.Write = writeUnits(ItemBytes(in.Key)+ItemBytes(in.ExpressionAttributeValues)) + m.gsiWritesNamed(aws.ToString(in.UpdateExpression), in.ExpressionAttributeNames)
		rep = one(result.(*awsddb.UpdateItemOutput).ConsumedCapacity)
	case *awsddb.DeleteItemInput:
		op = "DeleteItem"
		u.Write = 1
		rep = one(result.(*awsddb.DeleteItemOutput).ConsumedCapacity)
	case *awsddb.BatchWriteItemInput:
		op = "BatchWriteItem"
		for _, reqs := range in.RequestItems {
			for _, r := range reqs {
				switch {
				case r.PutRequest != nil:
					u.Write += writeUnits(ItemBytes(r.PutRequest.Item)) + m.gsiWrites(r.PutRequest.Item)
				case r.DeleteRequest != nil:
					u.Write += 1 + float64(len(m.GSIKeys)) // an entry per GSI may go
				}
			}
		}
		rep = result.(*awsddb.BatchWriteItemOutput).ConsumedCapacity
	case *awsddb.TransactWriteItemsInput:
		op = "TransactWriteItems"
		for _, it := range in.TransactItems {
			switch {
			case it.Put != nil:
				u.Write += 2*writeUnits(ItemBytes(it.Put.Item)) + m.gsiWrites(it.Put.Item)
			case it.Update != nil:
				u.Write += 2*writeUnits(ItemBytes(it.Update.Key)+ItemBytes(it.Update.ExpressionAttributeValues)) +
					m.gsiWritesNamed(aws.ToString(it.Update.UpdateExpression), it.Update.ExpressionAttributeNames)
			case it.Delete != nil:
				u.Write += 2
			case it.ConditionCheck != nil:
				u.Write += 2
			}
		}
		rep = result.(*awsddb.TransactWriteItemsOutput).ConsumedCapacity
	default:
		return
	}
	u.Calls = 1
	var r Units
	for _, c := range rep {
		if c.ReadCapacityUnits != nil || c.WriteCapacityUnits != nil {
			r.Read += aws.ToFloat64(c.ReadCapacityUnits)
			r.Write += aws.ToFloat64(c.WriteCapacityUnits)
		} else if c.CapacityUnits != nil && u.Write > 0 {
			r.Write += aws.ToFloat64(c.CapacityUnits)
		} else if c.CapacityUnits != nil {
			r.Read += aws.ToFloat64(c.CapacityUnits)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.total = m.total.Add(u)
	m.byOp[op] = m.byOp[op].Add(u)
	if leg == External {
		m.reported = m.reported.Add(r)
	}
}

func one(c *types.ConsumedCapacity) []types.ConsumedCapacity {
	if c == nil {
		return nil
	}
	return []types.ConsumedCapacity{*c}
}

func writeUnits(bytes int) float64 { return math.Max(1, math.Ceil(float64(bytes)/1024)) }

// gsiWrites is one unit per GSI whose partition key the item has.
func (m *Meter) gsiWrites(it map[string]types.AttributeValue) float64 {
	n := 0.0
	for _, k := range m.GSIKeys {
		if _, ok := it[k]; ok {
			n++
		}
	}
	return n
}

// gsiWritesNamed is one unit per GSI key an update expression sets or
// removes.
func (m *Meter) gsiWritesNamed(expr string, names map[string]string) float64 {
	for alias, name := range names {
		expr = strings.ReplaceAll(expr, alias, name)
	}
	n := 0.0
	for _, k := range m.GSIKeys {
		if strings.Contains(expr, k+" ") || strings.Contains(expr, k+",") || strings.HasSuffix(expr, k) {
			n++
		}
	}
	return n
}

// ItemBytes is an item's size as DynamoDB counts it: attribute names plus
// values (strings and binaries their length, numbers about one byte per
// two digits plus one, other scalars one, lists and maps 3 bytes plus 1
// per element).
func ItemBytes(it map[string]types.AttributeValue) int {
	n := 0
	for k, v := range it {
		n += len(k) + valueBytes(v)
	}
	return n
}

func valueBytes(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return (len(strings.Trim(v.Value, "-0."))+1)/2 + 1
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + valueBytes(e)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += 1 + len(k) + valueBytes(e)
		}
		return n
	}
	return 1
}
