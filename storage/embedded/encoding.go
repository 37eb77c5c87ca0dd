package embedded

import (
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/fxamacker/cbor/v2"

	"github.com/drover-sched/drover/structs"
)

// Allocations are stored in CBOR (RFC 8949, github.com/fxamacker/cbor):
// a map keyed by the small integers of structs.Allocation's cbor tags,
// zero values left out, integers in their shortest form, floats in the
// shortest form that keeps their value, times as RFC 3339 strings with
// nanoseconds. The Job is never stored with an alloc (specs live once per
// job version). A stored value that starts with '{' is an alloc written as
// JSON by an earlier drover, and is read as such.
//
// Everything else (jobs, evals, deployments, nodes) stays JSON: those are
// read once per evaluation, allocs by the thousand.

var (
	allocEnc cbor.EncMode
	allocDec cbor.DecMode
)

func init() {
	var err error
	allocEnc, err = cbor.EncOptions{
		Time:          cbor.TimeRFC3339Nano,
		ShortestFloat: cbor.ShortestFloat16,
		Sort:          cbor.SortNone,
	}.EncMode()
	if err != nil {
		panic(fmt.Sprintf("cbor encoding options: %v", err))
	}
	allocDec, err = cbor.DecOptions{}.DecMode()
	if err != nil {
		panic(fmt.Sprintf("cbor decoding options: %v", err))
	}
}

// encodeAlloc returns the stored form of a (without its Job).
func encodeAlloc(a *structs.Allocation) ([]byte, error) {
	return allocEnc.Marshal(a)
}

// Keys of Allocation's index fields in its cbor tags (withIndexes).
const (
	keyCreateIndex      = 26
	keyModifyIndex      = 27
	keyAllocModifyIndex = 28
)

// withIndexes returns body, an alloc encoded with zero CreateIndex,
// ModifyIndex and AllocModifyIndex (so left out), with the three set to
// idx: the map's entry count grows by three and the entries are appended.
// Plan commits encode their placements before the write transaction and
// stamp the index, known only inside it, this way.
func withIndexes(body []byte, idx uint64) ([]byte, error) {
	if len(body) == 0 || body[0]>>5 != 5 {
		return nil, fmt.Errorf("stamp indexes: not a CBOR map")
	}
	var n uint64
	head := 1
	switch ai := body[0] & 0x1f; {
	case ai < 24:
		n = uint64(ai)
	case ai == 24 && len(body) >= 2:
		n, head = uint64(body[1]), 2
	case ai == 25 && len(body) >= 3:
		n, head = uint64(binary.BigEndian.Uint16(body[1:3])), 3
	default:
		return nil, fmt.Errorf("stamp indexes: map header %#x unsupported", body[0])
	}
	out := make([]byte, 0, len(body)+3*10)
	out = appendHead(out, 5, n+3)
	out = append(out, body[head:]...)
	for _, k := range []uint64{keyCreateIndex, keyModifyIndex, keyAllocModifyIndex} {
		out = appendHead(appendHead(out, 0, k), 0, idx)
	}
	return out, nil
}

// appendHead appends a CBOR head: major type and argument, shortest form.
func appendHead(b []byte, major byte, v uint64) []byte {
	m := major << 5
	switch {
	case v < 24:
		return append(b, m|byte(v))
	case v <= 0xff:
		return append(b, m|24, byte(v))
	case v <= 0xffff:
		return binary.BigEndian.AppendUint16(append(b, m|25), uint16(v))
	case v <= 0xffffffff:
		return binary.BigEndian.AppendUint32(append(b, m|26), uint32(v))
	default:
		return binary.BigEndian.AppendUint64(append(b, m|27), v)
	}
}

// decodeAlloc reads a stored alloc, CBOR or (older files) JSON.
func decodeAlloc(data []byte) (*structs.Allocation, error) {
	a := new(structs.Allocation)
	var err error
	if len(data) > 0 && data[0] == '{' {
		err = json.Unmarshal(data, a)
	} else {
		err = allocDec.Unmarshal(data, a)
	}
	if err != nil {
		return nil, fmt.Errorf("decode alloc: %w", err)
	}
	return a, nil
}
