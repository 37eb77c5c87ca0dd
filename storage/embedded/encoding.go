package embedded

import (
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
