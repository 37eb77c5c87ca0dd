package structs

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/google/uuid"
)

// GenerateUUID returns a random version-4 UUID string.
func GenerateUUID() string {
	return uuid.NewString()
}

// DeterministicID returns a UUID-shaped identifier (8-4-4-4-12 hex digits)
// derived from the SHA-256 of parts. The same parts always give the same ID
// and different parts practically never collide; parts are length-prefixed
// so that ("ab","c") and ("a","bc") differ.
func DeterministicID(parts ...string) string {
	h := sha256.New()
	var n [8]byte
	for _, p := range parts {
		l := uint64(len(p))
		for i := range n {
			n[i] = byte(l >> (8 * i))
		}
		h.Write(n[:])
		h.Write([]byte(p))
	}
	sum := h.Sum(nil)
	var b [36]byte
	hex.Encode(b[0:8], sum[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], sum[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], sum[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], sum[8:10])
	b[23] = '-'
	hex.Encode(b[24:36], sum[10:16])
	return string(b[:])
}

// AllocIDForPlacement returns the ID of the alloc placed by evalID under
// name, as a canary or not, replacing previousAllocID (or none). A plan that
// is committed twice (a redelivered or re-run evaluation) therefore carries
// the same alloc IDs, and stores write new allocs only if the ID is absent:
// a replayed commit cannot create a second alloc for the same placement.
func AllocIDForPlacement(evalID, name string, canary bool, previousAllocID string) string {
	c := "0"
	if canary {
		c = "1"
	}
	return DeterministicID("alloc", evalID, name, c, previousAllocID)
}

// AllocIDForNodePlacement returns the ID of the alloc a system or sysbatch
// evaluation places under name on one node, replacing previousAllocID (or
// none): the system scheduler places the same name on every node, so the
// node is part of the placement, and a replayed commit still cannot create
// a second alloc on a node.
func AllocIDForNodePlacement(evalID, name, nodeID, previousAllocID string) string {
	return DeterministicID("alloc", evalID, name, "node", nodeID, previousAllocID)
}
