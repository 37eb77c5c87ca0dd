package structs

import (
	"slices"
	"time"
)

// ACL token types, Nomad's.
const (
	// ACLClientTokenType is a token whose rights are its policies'.
	ACLClientTokenType = "client"
	// ACLManagementTokenType is a token that may do everything.
	ACLManagementTokenType = "management"
)

// ACLToken is a stored ACL token, Nomad's ACLToken without the secret: the
// store keeps only SecretHash (hex SHA-256 of the SecretID), so a token's
// SecretID can be shown once, when it is created, and never again.
type ACLToken struct {
	// AccessorID is the token's public ID (a UUID).
	AccessorID string
	// SecretHash is the hex SHA-256 of the token's SecretID. It never
	// leaves the server: the API answers with its own shape.
	SecretHash string
	Name       string
	// Type is ACLClientTokenType or ACLManagementTokenType.
	Type string
	// Policies name the ACL policies of a client token (none for a
	// management token). Policies that do not exist grant nothing.
	Policies []string
	// Global is accepted and kept, as Nomad's: drover runs one region, so
	// every token is valid everywhere it runs.
	Global     bool
	CreateTime time.Time
	// ExpirationTime, when set, is when the token stops working (UTC).
	ExpirationTime *time.Time
	// ExpirationTTL is the lifetime asked for at creation (ExpirationTime
	// is CreateTime plus it).
	ExpirationTTL time.Duration
	CreateIndex   uint64
	ModifyIndex   uint64
}

// Copy returns a deep copy of the token.
func (t *ACLToken) Copy() *ACLToken {
	if t == nil {
		return nil
	}
	c := *t
	c.Policies = slices.Clone(t.Policies)
	if t.ExpirationTime != nil {
		e := *t.ExpirationTime
		c.ExpirationTime = &e
	}
	return &c
}

// IsManagement reports whether the token may do everything.
func (t *ACLToken) IsManagement() bool { return t != nil && t.Type == ACLManagementTokenType }

// IsExpired reports whether the token's expiration time is at or before
// now, as Nomad's ACLToken.IsExpired.
func (t *ACLToken) IsExpired(now time.Time) bool {
	return t != nil && t.ExpirationTime != nil && !t.ExpirationTime.IsZero() && !t.ExpirationTime.After(now)
}

// ACLPolicy is a named set of ACL rules, Nomad's ACLPolicy: Rules is the
// policy's HCL or JSON source, kept as written.
type ACLPolicy struct {
	Name        string
	Description string
	Rules       string
	CreateIndex uint64
	ModifyIndex uint64
}

// Copy returns a copy of the policy.
func (p *ACLPolicy) Copy() *ACLPolicy {
	if p == nil {
		return nil
	}
	c := *p
	return &c
}
