package dynamodb

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// ACL tokens and policies, and node secrets. Items:
//
//	token          ACL                   TOKEN#<accessor>  v: the token (with its secret's hash), mi
//	token lookup   TOKEN#<secret hash>   TOKEN             v: the same token, acc: its accessor
//	policy         ACL                   POLICY#<name>     v, mi
//	bootstrap      ACL                   BOOTSTRAP         idx: the index of the last bootstrap
//	node secret    NODESECRET#<node id>  SECRET            h: the hash of the node's secret
//
// The authorizer function reads only token lookup items (its role allows
// GetItem where dynamodb:LeadingKeys is TOKEN#*); both token items are
// written and deleted in one transaction.

const (
	pkACL         = "ACL"
	skBootstrap   = "BOOTSTRAP"
	skTokenLookup = "TOKEN"
	skNodeSecret  = "SECRET"
)

func tokenSK(accessor string) string    { return "TOKEN#" + accessor }
func tokenLookupPK(hash string) string  { return "TOKEN#" + hash }
func policySK(name string) string       { return "POLICY#" + name }
func nodeSecretPK(nodeID string) string { return "NODESECRET#" + nodeID }

// ACLBootstrapIndex implements storage.Store.
func (s *Store) ACLBootstrapIndex(ctx context.Context) (uint64, error) {
	it, err := s.get(ctx, pkACL, skBootstrap, true)
	if err != nil {
		return 0, err
	}
	return getU(it, "idx"), nil
}

// ACLBootstrap implements storage.Store.
func (s *Store) ACLBootstrap(ctx context.Context, token *structs.ACLToken, expectIndex uint64) (*structs.ACLToken, error) {
	// The bootstrap item's index was observed when the caller read it
	// (ACLBootstrapIndex), so this one is larger.
	idx := s.nextIndex()
	t := token.Copy()
	t.CreateIndex, t.ModifyIndex = idx, idx
	cond, vals := "attribute_not_exists(idx)", item{}
	if expectIndex != 0 {
		cond, vals = "idx = :expect", item{":expect": avU(expectIndex)}
	}
	boot := key(pkACL, skBootstrap)
	boot["idx"] = avU(idx)
	acts := append([]action{s.put(boot, cond, vals, "ACL bootstrap index unchanged")}, s.tokenPuts(t, nil)...)
	if err := s.transact(ctx, acts); err != nil {
		return nil, fmt.Errorf("bootstrap ACLs: %w", err)
	}
	return t, s.bumpTables(ctx, idx, storage.TableACLTokens)
}

// tokenPuts writes both items of a token: created (old nil) only if
// absent, replaced only if unchanged since it was read.
func (s *Store) tokenPuts(t, old *structs.ACLToken) []action {
	main := key(pkACL, tokenSK(t.AccessorID))
	main["v"], main["mi"] = avB(encode(t)), avU(t.ModifyIndex)
	cond, vals := "attribute_not_exists(PK)", item{}
	if old != nil {
		cond, vals = "mi = :pmi", item{":pmi": avU(old.ModifyIndex)}
	}
	lookup := key(tokenLookupPK(t.SecretHash), skTokenLookup)
	lookup["v"], lookup["acc"] = avB(encode(t)), avS(t.AccessorID)
	return []action{
		s.put(main, cond, vals, "ACL token "+t.AccessorID+" unchanged"),
		s.put(lookup, "attribute_not_exists(PK) OR acc = :acc", item{":acc": avS(t.AccessorID)}, "no other ACL token has this secret"),
	}
}

// UpsertACLTokens implements storage.Store.
func (s *Store) UpsertACLTokens(ctx context.Context, tokens []*structs.ACLToken) (uint64, error) {
	out, err := withConflictRetry(ctx, s, func() (uint64, error) {
		olds := make([]*structs.ACLToken, len(tokens))
		for i, tok := range tokens {
			old, err := s.tokenItem(ctx, tok.AccessorID)
			if err != nil {
				return 0, err
			}
			olds[i] = old
		}
		idx := s.nextIndex() // after the reads: larger than what they saw
		var acts []action
		for i, tok := range tokens {
			old := olds[i]
			t := tok.Copy()
			t.CreateIndex, t.ModifyIndex = idx, idx
			if old != nil {
				t.SecretHash, t.CreateTime, t.CreateIndex = old.SecretHash, old.CreateTime, old.CreateIndex
			}
			if t.AccessorID == "" || t.SecretHash == "" {
				return 0, fmt.Errorf("ACL token: accessor ID and secret hash are required")
			}
			acts = append(acts, s.tokenPuts(t, old)...)
		}
		if err := s.transact(ctx, acts); err != nil {
			return 0, raceOnConflictUnlessSecret(err)
		}
		return idx, s.bumpTables(ctx, idx, storage.TableACLTokens)
	})
	if err != nil {
		return 0, fmt.Errorf("upsert ACL tokens: %w", err)
	}
	return out, nil
}

// raceOnConflictUnlessSecret retries a token write that lost a race with
// a concurrent one, and reports a secret that is another token's as the
// conflict it is.
func raceOnConflictUnlessSecret(err error) error {
	var ce *storage.ConflictError
	if errors.As(err, &ce) && ce.Reason == "no other ACL token has this secret" {
		return storage.Conflictf("another ACL token has this secret")
	}
	return raceOnConflict(err)
}

func (s *Store) tokenItem(ctx context.Context, accessor string) (*structs.ACLToken, error) {
	it, err := s.get(ctx, pkACL, tokenSK(accessor), true)
	if err != nil || it == nil {
		return nil, err
	}
	return decode[structs.ACLToken](getB(it, "v"))
}

// ACLTokenByAccessor implements storage.Store.
func (s *Store) ACLTokenByAccessor(ctx context.Context, accessorID string) (*structs.ACLToken, error) {
	t, err := s.tokenItem(ctx, accessorID)
	if err != nil {
		return nil, err
	}
	if t == nil {
		return nil, storage.NotFoundf("ACL token %q", accessorID)
	}
	return t, nil
}

// ACLTokenBySecretHash implements storage.Store and acl.TokenLookup: one
// strongly consistent GetItem of TOKEN#<hash>, the only read the
// authorizer function makes.
func (s *Store) ACLTokenBySecretHash(ctx context.Context, hash string) (*structs.ACLToken, error) {
	it, err := s.get(ctx, tokenLookupPK(hash), skTokenLookup, true)
	if err != nil {
		return nil, err
	}
	if it == nil || !has(it, "v") {
		return nil, storage.NotFoundf("ACL token with this secret")
	}
	return decode[structs.ACLToken](getB(it, "v"))
}

// ACLTokens implements storage.Store.
func (s *Store) ACLTokens(ctx context.Context, prefix string) ([]*structs.ACLToken, error) {
	items, err := s.queryPrefix(ctx, pkACL, tokenSK(prefix), true)
	if err != nil {
		return nil, err
	}
	out, err := decodeValues[structs.ACLToken](items)
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].CreateIndex != out[j].CreateIndex {
			return out[i].CreateIndex < out[j].CreateIndex
		}
		return out[i].AccessorID < out[j].AccessorID
	})
	return out, nil
}

func (s *Store) del(k item, cond, desc string) action {
	d := &types.Delete{TableName: &s.table, Key: k}
	if cond != "" {
		d.ConditionExpression = aws.String(cond)
	}
	return action{item: types.TransactWriteItem{Delete: d}, desc: desc, size: itemSize(k)}
}

// DeleteACLTokens implements storage.Store.
func (s *Store) DeleteACLTokens(ctx context.Context, accessorIDs []string) (uint64, error) {
	var acts []action
	for _, id := range accessorIDs {
		t, err := s.tokenItem(ctx, id)
		if err != nil {
			return 0, err
		}
		if t == nil {
			return 0, storage.NotFoundf("ACL token %q", id)
		}
		acts = append(acts, s.del(key(pkACL, tokenSK(id)), "attribute_exists(PK)", "ACL token "+id+" exists"),
			s.del(key(tokenLookupPK(t.SecretHash), skTokenLookup), "", "ACL token lookup of "+id))
	}
	idx := s.nextIndex()
	if err := s.transact(ctx, acts); err != nil {
		return 0, fmt.Errorf("delete ACL tokens: %w", err)
	}
	return idx, s.bumpTables(ctx, idx, storage.TableACLTokens)
}

// UpsertACLPolicies implements storage.Store.
func (s *Store) UpsertACLPolicies(ctx context.Context, policies []*structs.ACLPolicy) (uint64, error) {
	out, err := withConflictRetry(ctx, s, func() (uint64, error) {
		prevs := make([]item, len(policies))
		for i, p := range policies {
			prev, err := s.get(ctx, pkACL, policySK(p.Name), true)
			if err != nil {
				return 0, err
			}
			prevs[i] = prev
		}
		idx := s.nextIndex() // after the reads: larger than what they saw
		var acts []action
		for i, p := range policies {
			prev := prevs[i]
			c := p.Copy()
			c.CreateIndex, c.ModifyIndex = idx, idx
			cond, vals := "attribute_not_exists(PK)", item{}
			if prev != nil {
				old, err := decode[structs.ACLPolicy](getB(prev, "v"))
				if err != nil {
					return 0, err
				}
				c.CreateIndex = old.CreateIndex
				cond, vals = "mi = :pmi", item{":pmi": avU(getU(prev, "mi"))}
			}
			it := key(pkACL, policySK(c.Name))
			it["v"], it["mi"] = avB(encode(c)), avU(idx)
			acts = append(acts, s.put(it, cond, vals, "ACL policy "+c.Name+" unchanged"))
		}
		if err := s.transact(ctx, acts); err != nil {
			return 0, raceOnConflict(err)
		}
		return idx, s.bumpTables(ctx, idx, storage.TableACLPolicies)
	})
	if err != nil {
		return 0, fmt.Errorf("upsert ACL policies: %w", err)
	}
	return out, nil
}

// ACLPolicy implements storage.Store.
func (s *Store) ACLPolicy(ctx context.Context, name string) (*structs.ACLPolicy, error) {
	it, err := s.get(ctx, pkACL, policySK(name), true)
	if err != nil {
		return nil, err
	}
	if it == nil {
		return nil, storage.NotFoundf("ACL policy %q", name)
	}
	return decode[structs.ACLPolicy](getB(it, "v"))
}

// ACLPolicies implements storage.Store.
func (s *Store) ACLPolicies(ctx context.Context, prefix string) ([]*structs.ACLPolicy, error) {
	items, err := s.queryPrefix(ctx, pkACL, policySK(prefix), true)
	if err != nil {
		return nil, err
	}
	out, err := decodeValues[structs.ACLPolicy](items)
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// DeleteACLPolicies implements storage.Store.
func (s *Store) DeleteACLPolicies(ctx context.Context, names []string) (uint64, error) {
	var acts []action
	for _, n := range names {
		it, err := s.get(ctx, pkACL, policySK(n), true)
		if err != nil {
			return 0, err
		}
		if it == nil {
			return 0, storage.NotFoundf("ACL policy %q", n)
		}
		acts = append(acts, s.del(key(pkACL, policySK(n)), "attribute_exists(PK)", "ACL policy "+n+" exists"))
	}
	idx := s.nextIndex()
	if err := s.transact(ctx, acts); err != nil {
		if errors.Is(err, storage.ErrConflict) {
			return 0, storage.NotFoundf("delete ACL policies: one was deleted meanwhile (%v)", err)
		}
		return 0, fmt.Errorf("delete ACL policies: %w", err)
	}
	return idx, s.bumpTables(ctx, idx, storage.TableACLPolicies)
}

// BindNodeSecret implements storage.Store: one conditional PutItem.
func (s *Store) BindNodeSecret(ctx context.Context, nodeID, secretHash string) error {
	it := key(nodeSecretPK(nodeID), skNodeSecret)
	it["h"] = avS(secretHash)
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.table, Item: it,
		ConditionExpression:       aws.String("attribute_not_exists(PK) OR h = :h"),
		ExpressionAttributeValues: item{":h": avS(secretHash)}})
	if kind, _ := classify(err); kind == failCondition {
		return storage.Conflictf("node %s is bound to another secret", nodeID)
	}
	return wrapErr(err, "bind secret of node "+nodeID)
}

// NodeSecretHash implements storage.Store.
func (s *Store) NodeSecretHash(ctx context.Context, nodeID string) (string, error) {
	it, err := s.get(ctx, nodeSecretPK(nodeID), skNodeSecret, true)
	if err != nil {
		return "", err
	}
	if it == nil {
		return "", storage.NotFoundf("secret of node %q", nodeID)
	}
	return getS(it, "h"), nil
}
