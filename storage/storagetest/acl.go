package storagetest

import (
	"errors"
	"testing"
	"time"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// Conformance of ACL tokens, policies, the bootstrap index and node
// secrets.

func testToken(accessor, hash string, policies ...string) *structs.ACLToken {
	typ := structs.ACLClientTokenType
	if len(policies) == 0 {
		typ = structs.ACLManagementTokenType
	}
	return &structs.ACLToken{AccessorID: accessor, SecretHash: hash, Name: "t-" + accessor, Type: typ, Policies: policies,
		CreateTime: time.Unix(1700000000, 0).UTC()}
}

func testACLTokens(t *testing.T, s storage.Store) {
	i1 := must(s.UpsertACLTokens(ctx, []*structs.ACLToken{testToken("b-1", "hash-b", "readonly")}))
	must(s.UpsertACLTokens(ctx, []*structs.ACLToken{testToken("a-1", "hash-a")}))
	got := must(s.ACLTokenByAccessor(ctx, "b-1"))
	if got.SecretHash != "hash-b" || got.Type != structs.ACLClientTokenType || len(got.Policies) != 1 || got.CreateIndex != i1 || got.ModifyIndex != i1 {
		t.Fatalf("token read back: %+v (write index %d)", got, i1)
	}
	if byHash := must(s.ACLTokenBySecretHash(ctx, "hash-b")); byHash.AccessorID != "b-1" {
		t.Fatalf("lookup by secret hash: %+v", byHash)
	}
	if _, err := s.ACLTokenBySecretHash(ctx, "nope"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("unknown hash: %v", err)
	}
	if _, err := s.ACLTokenByAccessor(ctx, "nope"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("unknown accessor: %v", err)
	}
	// A replacement keeps the hash, create time and create index.
	upd := testToken("b-1", "", "readonly", "ops")
	upd.Name, upd.CreateTime = "renamed", time.Unix(1800000000, 0).UTC()
	i2 := must(s.UpsertACLTokens(ctx, []*structs.ACLToken{upd}))
	got = must(s.ACLTokenByAccessor(ctx, "b-1"))
	if got.Name != "renamed" || len(got.Policies) != 2 || got.SecretHash != "hash-b" || got.CreateIndex != i1 || got.ModifyIndex != i2 ||
		!got.CreateTime.Equal(time.Unix(1700000000, 0)) {
		t.Fatalf("replaced token: %+v", got)
	}
	if must(s.ACLTokenBySecretHash(ctx, "hash-b")).Name != "renamed" {
		t.Fatal("the lookup by hash does not see the replacement")
	}
	// Another token with the same secret is refused, and nothing is written.
	if _, err := s.UpsertACLTokens(ctx, []*structs.ACLToken{testToken("c-1", "hash-a", "x")}); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("duplicate secret: %v", err)
	}
	if _, err := s.ACLTokenByAccessor(ctx, "c-1"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("refused token was written: %v", err)
	}
	// Listing: create index order, accessor prefix.
	all := must(s.ACLTokens(ctx, ""))
	if len(all) != 2 || all[0].AccessorID != "b-1" || all[1].AccessorID != "a-1" {
		t.Fatalf("listing: %+v", all)
	}
	if pre := must(s.ACLTokens(ctx, "a-")); len(pre) != 1 || pre[0].AccessorID != "a-1" {
		t.Fatalf("prefix listing: %+v", pre)
	}
	if idx := must(s.Index(ctx, storage.TableACLTokens)); idx < i2 {
		t.Fatalf("token table index %d < %d", idx, i2)
	}
	// Deleting an unknown token deletes nothing; deleting removes both
	// lookups.
	if _, err := s.DeleteACLTokens(ctx, []string{"a-1", "nope"}); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("delete with an unknown accessor: %v", err)
	}
	must(s.ACLTokenByAccessor(ctx, "a-1"))
	must(s.DeleteACLTokens(ctx, []string{"a-1"}))
	if _, err := s.ACLTokenBySecretHash(ctx, "hash-a"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("deleted token still found by hash: %v", err)
	}
	if _, err := s.ACLTokenByAccessor(ctx, "a-1"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("deleted token still found: %v", err)
	}
}

func testACLPolicies(t *testing.T, s storage.Store) {
	if _, err := s.ACLPolicy(ctx, "readonly"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("absent policy: %v", err)
	}
	i1 := must(s.UpsertACLPolicies(ctx, []*structs.ACLPolicy{
		{Name: "readonly", Description: "reads", Rules: `namespace "*" { policy = "read" }`},
		{Name: "ops", Rules: `node { policy = "write" }`},
	}))
	i2 := must(s.UpsertACLPolicies(ctx, []*structs.ACLPolicy{{Name: "readonly", Rules: `namespace "default" { policy = "read" }`}}))
	got := must(s.ACLPolicy(ctx, "readonly"))
	if got.Rules != `namespace "default" { policy = "read" }` || got.Description != "" || got.CreateIndex != i1 || got.ModifyIndex != i2 {
		t.Fatalf("replaced policy: %+v (indexes %d, %d)", got, i1, i2)
	}
	all := must(s.ACLPolicies(ctx, ""))
	if len(all) != 2 || all[0].Name != "ops" || all[1].Name != "readonly" {
		t.Fatalf("listing: %+v", all)
	}
	if pre := must(s.ACLPolicies(ctx, "re")); len(pre) != 1 || pre[0].Name != "readonly" {
		t.Fatalf("prefix listing: %+v", pre)
	}
	if idx := must(s.Index(ctx, storage.TableACLPolicies)); idx < i2 {
		t.Fatalf("policy table index %d < %d", idx, i2)
	}
	if _, err := s.DeleteACLPolicies(ctx, []string{"ops", "nope"}); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("delete with an unknown name: %v", err)
	}
	must(s.ACLPolicy(ctx, "ops"))
	must(s.DeleteACLPolicies(ctx, []string{"ops"}))
	if _, err := s.ACLPolicy(ctx, "ops"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("deleted policy: %v", err)
	}
}

func testACLBootstrap(t *testing.T, s storage.Store) {
	if idx := must(s.ACLBootstrapIndex(ctx)); idx != 0 {
		t.Fatalf("fresh store's bootstrap index: %d", idx)
	}
	first := must(s.ACLBootstrap(ctx, testToken("boot-1", "hash-1"), 0))
	idx := must(s.ACLBootstrapIndex(ctx))
	if idx == 0 || first.CreateIndex != idx || must(s.ACLTokenBySecretHash(ctx, "hash-1")).AccessorID != "boot-1" {
		t.Fatalf("bootstrap: token %+v, index %d", first, idx)
	}
	// Once only: a second bootstrap that expects "never" is refused.
	if _, err := s.ACLBootstrap(ctx, testToken("boot-2", "hash-2"), 0); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("second bootstrap: %v", err)
	}
	if _, err := s.ACLTokenByAccessor(ctx, "boot-2"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("refused bootstrap wrote its token: %v", err)
	}
	// The reset: expecting the current index bootstraps again.
	must(s.ACLBootstrap(ctx, testToken("boot-3", "hash-3"), idx))
	if again := must(s.ACLBootstrapIndex(ctx)); again <= idx {
		t.Fatalf("bootstrap index after the reset: %d, was %d", again, idx)
	}
	if _, err := s.ACLBootstrap(ctx, testToken("boot-4", "hash-4"), idx); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("a reset index used twice: %v", err)
	}
}

func testNodeSecrets(t *testing.T, s storage.Store) {
	if _, err := s.NodeSecretHash(ctx, "n1"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("unbound node: %v", err)
	}
	if err := s.BindNodeSecret(ctx, "n1", "h1"); err != nil {
		t.Fatal(err)
	}
	if err := s.BindNodeSecret(ctx, "n1", "h1"); err != nil {
		t.Fatalf("binding the same secret again: %v", err)
	}
	if err := s.BindNodeSecret(ctx, "n1", "h2"); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("another secret for a bound node: %v", err)
	}
	if h := must(s.NodeSecretHash(ctx, "n1")); h != "h1" {
		t.Fatalf("bound hash: %q", h)
	}
	if err := s.BindNodeSecret(ctx, "n2", "h2"); err != nil {
		t.Fatalf("another node may have its own secret: %v", err)
	}
}
