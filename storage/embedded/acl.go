package embedded

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// ACL tokens and policies, and node secrets:
//
//	acl_tokens          accessor ID → *structs.ACLToken (the secret's hash, never the secret)
//	acl_tokens_by_hash  secret hash → accessor ID
//	acl_policies        name → *structs.ACLPolicy
//	node_secrets        node ID → hash of the node's secret
//	config "acl_bootstrap" → the index of the last bootstrap

var keyACLBootstrap = []byte("acl_bootstrap")

// ACLBootstrapIndex implements storage.Store.
func (s *Store) ACLBootstrapIndex(ctx context.Context) (uint64, error) {
	var idx uint64
	err := s.read(ctx, func(tx *bolt.Tx) error {
		idx = getUint(tx.Bucket(bConfig).Get(keyACLBootstrap))
		return nil
	})
	return idx, err
}

// ACLBootstrap implements storage.Store.
func (s *Store) ACLBootstrap(ctx context.Context, token *structs.ACLToken, expectIndex uint64) (*structs.ACLToken, error) {
	var out *structs.ACLToken
	_, err := s.write(ctx, func(w *wtx) error {
		if cur := getUint(w.tx.Bucket(bConfig).Get(keyACLBootstrap)); cur != expectIndex {
			return storage.Conflictf("ACL bootstrap index is %d, not %d", cur, expectIndex)
		}
		t, err := w.putACLToken(token)
		if err != nil {
			return err
		}
		out = t
		return w.tx.Bucket(bConfig).Put(keyACLBootstrap, putUint(w.index))
	})
	if err != nil {
		return nil, fmt.Errorf("bootstrap ACLs: %w", err)
	}
	return out, nil
}

// putACLToken creates or replaces a token by accessor ID, keeping a
// replaced token's secret hash, create time and create index.
func (w *wtx) putACLToken(token *structs.ACLToken) (*structs.ACLToken, error) {
	b, byHash := w.tx.Bucket(bACLTokens), w.tx.Bucket(bACLTokensByHash)
	t := token.Copy()
	old, err := getJSON[structs.ACLToken](b, []byte(t.AccessorID))
	if err != nil {
		return nil, err
	}
	t.CreateIndex = w.index
	if old != nil {
		t.SecretHash, t.CreateTime, t.CreateIndex = old.SecretHash, old.CreateTime, old.CreateIndex
	}
	if t.AccessorID == "" || t.SecretHash == "" {
		return nil, fmt.Errorf("ACL token: accessor ID and secret hash are required")
	}
	if other := byHash.Get([]byte(t.SecretHash)); other != nil && string(other) != t.AccessorID {
		return nil, storage.Conflictf("another ACL token has this secret")
	}
	t.ModifyIndex = w.index
	w.touch(storage.TableACLTokens)
	if err := byHash.Put([]byte(t.SecretHash), []byte(t.AccessorID)); err != nil {
		return nil, err
	}
	return t, putJSON(b, []byte(t.AccessorID), t)
}

// UpsertACLTokens implements storage.Store.
func (s *Store) UpsertACLTokens(ctx context.Context, tokens []*structs.ACLToken) (uint64, error) {
	idx, err := s.write(ctx, func(w *wtx) error {
		for _, t := range tokens {
			if _, err := w.putACLToken(t); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("upsert ACL tokens: %w", err)
	}
	return idx, nil
}

// ACLTokenByAccessor implements storage.Store.
func (s *Store) ACLTokenByAccessor(ctx context.Context, accessorID string) (*structs.ACLToken, error) {
	var out *structs.ACLToken
	err := s.read(ctx, func(tx *bolt.Tx) error {
		t, err := getRequired[structs.ACLToken](tx.Bucket(bACLTokens), []byte(accessorID), func() error {
			return storage.NotFoundf("ACL token %q", accessorID)
		})
		out = t
		return err
	})
	return out, err
}

// ACLTokenBySecretHash implements storage.Store.
func (s *Store) ACLTokenBySecretHash(ctx context.Context, hash string) (*structs.ACLToken, error) {
	var out *structs.ACLToken
	err := s.read(ctx, func(tx *bolt.Tx) error {
		acc := tx.Bucket(bACLTokensByHash).Get([]byte(hash))
		if acc == nil {
			return storage.NotFoundf("ACL token with this secret")
		}
		t, err := getRequired[structs.ACLToken](tx.Bucket(bACLTokens), acc, func() error {
			return storage.NotFoundf("ACL token with this secret")
		})
		out = t
		return err
	})
	return out, err
}

// ACLTokens implements storage.Store.
func (s *Store) ACLTokens(ctx context.Context, prefix string) ([]*structs.ACLToken, error) {
	var out []*structs.ACLToken
	err := s.read(ctx, func(tx *bolt.Tx) error {
		out = nil
		c := tx.Bucket(bACLTokens).Cursor()
		for k, v := c.Seek([]byte(prefix)); k != nil && bytes.HasPrefix(k, []byte(prefix)); k, v = c.Next() {
			t := new(structs.ACLToken)
			if err := json.Unmarshal(v, t); err != nil {
				return fmt.Errorf("decode ACL token %s: %w", k, err)
			}
			out = append(out, t)
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool {
		if out[i].CreateIndex != out[j].CreateIndex {
			return out[i].CreateIndex < out[j].CreateIndex
		}
		return out[i].AccessorID < out[j].AccessorID
	})
	return out, err
}

// DeleteACLTokens implements storage.Store.
func (s *Store) DeleteACLTokens(ctx context.Context, accessorIDs []string) (uint64, error) {
	idx, err := s.write(ctx, func(w *wtx) error {
		b, byHash := w.tx.Bucket(bACLTokens), w.tx.Bucket(bACLTokensByHash)
		for _, id := range accessorIDs {
			t, err := getRequired[structs.ACLToken](b, []byte(id), func() error { return storage.NotFoundf("ACL token %q", id) })
			if err != nil {
				return err
			}
			if err := byHash.Delete([]byte(t.SecretHash)); err != nil {
				return err
			}
			if err := b.Delete([]byte(id)); err != nil {
				return err
			}
		}
		w.touch(storage.TableACLTokens)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("delete ACL tokens: %w", err)
	}
	return idx, nil
}

// UpsertACLPolicies implements storage.Store.
func (s *Store) UpsertACLPolicies(ctx context.Context, policies []*structs.ACLPolicy) (uint64, error) {
	idx, err := s.write(ctx, func(w *wtx) error {
		b := w.tx.Bucket(bACLPolicies)
		for _, p := range policies {
			c := p.Copy()
			old, err := getJSON[structs.ACLPolicy](b, []byte(c.Name))
			if err != nil {
				return err
			}
			c.CreateIndex = w.index
			if old != nil {
				c.CreateIndex = old.CreateIndex
			}
			c.ModifyIndex = w.index
			if err := putJSON(b, []byte(c.Name), c); err != nil {
				return err
			}
		}
		w.touch(storage.TableACLPolicies)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("upsert ACL policies: %w", err)
	}
	return idx, nil
}

// ACLPolicy implements storage.Store.
func (s *Store) ACLPolicy(ctx context.Context, name string) (*structs.ACLPolicy, error) {
	var out *structs.ACLPolicy
	err := s.read(ctx, func(tx *bolt.Tx) error {
		p, err := getRequired[structs.ACLPolicy](tx.Bucket(bACLPolicies), []byte(name), func() error {
			return storage.NotFoundf("ACL policy %q", name)
		})
		out = p
		return err
	})
	return out, err
}

// ACLPolicies implements storage.Store.
func (s *Store) ACLPolicies(ctx context.Context, prefix string) ([]*structs.ACLPolicy, error) {
	var out []*structs.ACLPolicy
	err := s.read(ctx, func(tx *bolt.Tx) error {
		out = nil
		return tx.Bucket(bACLPolicies).ForEach(func(k, v []byte) error {
			if !strings.HasPrefix(string(k), prefix) {
				return nil
			}
			p := new(structs.ACLPolicy)
			if err := json.Unmarshal(v, p); err != nil {
				return fmt.Errorf("decode ACL policy %s: %w", k, err)
			}
			out = append(out, p)
			return nil
		})
	})
	return out, err
}

// DeleteACLPolicies implements storage.Store.
func (s *Store) DeleteACLPolicies(ctx context.Context, names []string) (uint64, error) {
	idx, err := s.write(ctx, func(w *wtx) error {
		b := w.tx.Bucket(bACLPolicies)
		for _, n := range names {
			if b.Get([]byte(n)) == nil {
				return storage.NotFoundf("ACL policy %q", n)
			}
			if err := b.Delete([]byte(n)); err != nil {
				return err
			}
		}
		w.touch(storage.TableACLPolicies)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("delete ACL policies: %w", err)
	}
	return idx, nil
}

// BindNodeSecret implements storage.Store.
func (s *Store) BindNodeSecret(ctx context.Context, nodeID, secretHash string) error {
	_, err := s.write(ctx, func(w *wtx) error {
		b := w.tx.Bucket(bNodeSecrets)
		if cur := b.Get([]byte(nodeID)); cur != nil {
			if string(cur) != secretHash {
				return storage.Conflictf("node %s is bound to another secret", nodeID)
			}
			return nil
		}
		return b.Put([]byte(nodeID), []byte(secretHash))
	})
	if err != nil {
		return fmt.Errorf("bind secret of node %s: %w", nodeID, err)
	}
	return nil
}

// NodeSecretHash implements storage.Store.
func (s *Store) NodeSecretHash(ctx context.Context, nodeID string) (string, error) {
	var out string
	err := s.read(ctx, func(tx *bolt.Tx) error {
		v := tx.Bucket(bNodeSecrets).Get([]byte(nodeID))
		if v == nil {
			return storage.NotFoundf("secret of node %q", nodeID)
		}
		out = string(v)
		return nil
	})
	return out, err
}
