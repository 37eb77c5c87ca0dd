package dynamodb

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/drover-sched/drover/acl"
)

// ACLToken implements acl.TokenStore: a strongly consistent GetItem of
// TOKEN#<hash>.
func (s *Store) ACLToken(ctx context.Context, hash string) (*acl.Token, error) {
	it, err := s.get(ctx, "TOKEN#"+hash, "TOKEN", true)
	if err != nil {
		return nil, err
	}
	if it == nil {
		return nil, acl.ErrNoToken
	}
	return &acl.Token{Hash: hash, Name: getS(it, "name"), Type: getS(it, "type")}, nil
}

// PutACLToken stores a token by its hash.
func (s *Store) PutACLToken(ctx context.Context, tok *acl.Token) error {
	it := key("TOKEN#"+tok.Hash, "TOKEN")
	it["name"], it["type"] = avS(tok.Name), avS(tok.Type)
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.table, Item: it})
	if err != nil {
		return fmt.Errorf("put ACL token %s: %w", tok.Name, err)
	}
	return nil
}
