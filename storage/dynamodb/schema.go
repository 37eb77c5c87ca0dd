package dynamodb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Global secondary indexes (README.md, "Indexes").
const (
	// GSI1 lists job heads, nodes, allocations, evaluations and
	// deployments by kind and ID (prefix).
	GSI1 = "gsi1"
	// GSI2 is sparse: evaluations while pending or blocked, by create
	// time, in four shards per status; active deployments.
	GSI2 = "gsi2"
)

// TableDefinition is the table as template.yaml, infra/ and the
// LocalStack init script declare it; CreateTable uses it for tests and
// local runs.
func TableDefinition(name string) *dynamodb.CreateTableInput {
	s := types.ScalarAttributeTypeS
	gsi := func(name, pk, sk string) types.GlobalSecondaryIndex {
		return types.GlobalSecondaryIndex{
			IndexName: aws.String(name),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(pk), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(sk), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
		}
	}
	var defs []types.AttributeDefinition
	for _, a := range []string{"PK", "SK", "g1pk", "g1sk", "g2pk", "g2sk"} {
		defs = append(defs, types.AttributeDefinition{AttributeName: aws.String(a), AttributeType: s})
	}
	return &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: defs,
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String("PK"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("SK"), KeyType: types.KeyTypeRange},
		},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{
			gsi(GSI1, "g1pk", "g1sk"), gsi(GSI2, "g2pk", "g2sk"),
		},
	}
}

// CreateTable creates the table (if it does not exist) and waits until it
// is active.
func CreateTable(ctx context.Context, client *dynamodb.Client, name string) error {
	_, err := client.CreateTable(ctx, TableDefinition(name))
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("create table %s: %w", name, err)
	}
	w := dynamodb.NewTableExistsWaiter(client, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 100*time.Millisecond, time.Second
	})
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, 2*time.Minute); err != nil {
		return fmt.Errorf("wait for table %s: %w", name, err)
	}
	return nil
}
