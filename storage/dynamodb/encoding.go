package dynamodb

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/fxamacker/cbor/v2"

	"github.com/drover-sched/drover/structs"
)

// Large values live in a binary attribute `v`, compressed, behind a format
// byte:
//
//	0x01  raw DEFLATE of CBOR (RFC 8949): allocations, keyed by the small
//	      integers of structs.Allocation's cbor tags, zero values left out
//	      (about half the bytes of the same alloc as compressed JSON, so a
//	      master or an assignment stays within one write unit)
//	0x02  raw DEFLATE of JSON: everything else (jobs, evals, nodes,
//	      deployments, ...)
//	0x1f  gzip of JSON (0x1f 0x8b): what drover wrote before; still read
//
// Write units are charged per KB of item, so the bytes of the value are
// what a placement costs.
const (
	formatAllocCBOR byte = 0x01
	formatJSON      byte = 0x02
	gzipMagic       byte = 0x1f
)

var (
	allocEnc cbor.EncMode
	allocDec cbor.DecMode
)

func init() {
	var err error
	allocEnc, err = cbor.EncOptions{Time: cbor.TimeRFC3339Nano, ShortestFloat: cbor.ShortestFloat16}.EncMode()
	if err != nil {
		panic(fmt.Sprintf("cbor encoding options: %v", err))
	}
	allocDec, err = cbor.DecOptions{}.DecMode()
	if err != nil {
		panic(fmt.Sprintf("cbor decoding options: %v", err))
	}
}

var flatePool = sync.Pool{New: func() any { w, _ := flate.NewWriter(io.Discard, flate.DefaultCompression); return w }}

func deflate(format byte, raw []byte) []byte {
	var buf bytes.Buffer
	buf.Grow(len(raw)/2 + 16)
	buf.WriteByte(format)
	zw := flatePool.Get().(*flate.Writer)
	zw.Reset(&buf)
	_, _ = zw.Write(raw)
	_ = zw.Close()
	flatePool.Put(zw)
	return buf.Bytes()
}

// encode is v as compressed JSON (format 0x02).
func encode(v any) []byte {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("encode %T: %v", v, err))
	}
	return deflate(formatJSON, raw)
}

// encodeAlloc is a as compressed CBOR (format 0x01).
func encodeAlloc(a *structs.Allocation) []byte {
	raw, err := allocEnc.Marshal(a)
	if err != nil {
		panic(fmt.Sprintf("encode alloc %s: %v", a.ID, err))
	}
	return deflate(formatAllocCBOR, raw)
}

// decode reads a value in any of the formats.
// decodeValues decodes the value attribute ("v") of each item, in order.
func decodeValues[T any](items []item) ([]*T, error) {
	out := make([]*T, 0, len(items))
	for _, it := range items {
		v, err := decode[T](getB(it, "v"))
		if err != nil {
			return nil, fmt.Errorf("item %s/%s: %w", getS(it, "PK"), getS(it, "SK"), err)
		}
		out = append(out, v)
	}
	return out, nil
}

func decode[T any](b []byte) (*T, error) {
	if len(b) == 0 {
		return nil, errors.New("missing value attribute")
	}
	out := new(T)
	var err error
	switch b[0] {
	case formatJSON:
		err = json.NewDecoder(flate.NewReader(bytes.NewReader(b[1:]))).Decode(out)
	case formatAllocCBOR:
		var raw []byte
		if raw, err = io.ReadAll(flate.NewReader(bytes.NewReader(b[1:]))); err == nil {
			err = allocDec.Unmarshal(raw, out)
		}
	case gzipMagic:
		var zr *gzip.Reader
		if zr, err = gzip.NewReader(bytes.NewReader(b)); err == nil {
			err = json.NewDecoder(zr).Decode(out)
		}
	default:
		err = fmt.Errorf("unknown value format %#x", b[0])
	}
	if err != nil {
		return nil, fmt.Errorf("decode %T: %w", out, err)
	}
	return out, nil
}
