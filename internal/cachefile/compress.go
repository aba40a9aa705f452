package cachefile

import (
	"fmt"

	"github.com/klauspost/compress/s2"
)

// Compression names how a record's payload is compressed (since schema
// v3). It is stored in every record, so the values must never be
// renumbered.
type Compression uint8

const (
	// CompressionNone is a payload stored as encoded.
	CompressionNone Compression = 0
	// CompressionS2 is a payload in S2 block format (klauspost/compress/s2),
	// which decodes fast (BenchmarkPayloadCompression in internal/boltstore
	// logs a Pod's sizes and measures the read's cost).
	CompressionS2 Compression = 1
)

func (c Compression) String() string {
	switch c {
	case CompressionNone:
		return "none"
	case CompressionS2:
		return "s2"
	}
	return fmt.Sprintf("compression(%d)", uint8(c))
}

// compressMin is the smallest payload worth compressing: below it the
// block header and the lost alignment outweigh the savings.
const compressMin = 128

// MaxPayload bounds the decompressed size of a payload, so that a damaged
// length cannot make a reader allocate without bound.
const MaxPayload = 64 << 20

// CompressPayload returns p compressed with S2, or p itself with
// CompressionNone when compression would not save an eighth of it. A
// payload to be sealed is compressed first: sealed bytes do not compress.
func CompressPayload(p []byte) (Compression, []byte) {
	return CompressPayloadTo(nil, p)
}

// CompressPayloadTo is CompressPayload writing into dst's storage when it
// is large enough (s2.MaxEncodedLen of p); the result may alias dst or p.
//
// It uses S2's default encoder, not EncodeBetter, which takes much longer
// for a few percent fewer bytes: every watch event and list item is
// compressed on the informer's critical path. Both write the same block
// format.
func CompressPayloadTo(dst, p []byte) (Compression, []byte) {
	if len(p) < compressMin || len(p) > MaxPayload {
		return CompressionNone, p
	}
	if n := s2.MaxEncodedLen(len(p)); cap(dst) < n {
		dst = make([]byte, n)
	}
	out := s2.Encode(dst[:cap(dst)], p)
	if len(out) > len(p)-len(p)/8 {
		return CompressionNone, p
	}
	return CompressionS2, out
}

// DecompressPayload returns the plain payload of p compressed with c,
// reusing dst's storage when it is large enough. A payload that does not
// decompress wraps ErrCorruptRecord.
func DecompressPayload(c Compression, p, dst []byte) ([]byte, error) {
	switch c {
	case CompressionNone:
		return p, nil
	case CompressionS2:
		n, err := s2.DecodedLen(p)
		if err != nil {
			return nil, fmt.Errorf("%w: s2 payload: %v", ErrCorruptRecord, err)
		}
		if n > MaxPayload {
			return nil, fmt.Errorf("%w: s2 payload of %d bytes decompressed, more than %d", ErrCorruptRecord, n, MaxPayload)
		}
		if cap(dst) < n {
			dst = make([]byte, n)
		}
		out, err := s2.Decode(dst[:cap(dst)], p)
		if err != nil {
			return nil, fmt.Errorf("%w: s2 payload: %v", ErrCorruptRecord, err)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w: unknown compression %d", ErrCorruptRecord, c)
}
