package protocodec

import "errors"

// The errors Decode returns, each wrapped with the message and field it
// was decoding. They are the conditions on which the generated code of
// Kubernetes API types fails too.
var (
	// ErrTruncated: a value runs past the end of its message.
	ErrTruncated = errors.New("protocodec: unexpected end of message")
	// ErrInvalidLength: a length is negative or overflows.
	ErrInvalidLength = errors.New("protocodec: invalid length")
	// ErrIntOverflow: a varint is longer than ten bytes.
	ErrIntOverflow = errors.New("protocodec: integer overflow")
	// ErrWireType: a field has another wire type than its Go type takes,
	// or a tag is illegal (field number 0, a stray end of group).
	ErrWireType = errors.New("protocodec: wrong wire type")
	// ErrGroup: a group is not closed, or closed where none is open.
	ErrGroup = errors.New("protocodec: unexpected end of group")
)

var (
	// ErrNotProtobuf is returned by Strip for bytes it cannot parse as
	// protobuf; the caller then decodes the old version in full, which
	// reports what is wrong with it.
	ErrNotProtobuf = errors.New("protocodec: not a protobuf message")

	// errNoMessage and errShape are returned by ApplyShared when the new
	// object is not what its encoding decodes to: a message shared field
	// by field is missing, or a slice shared element by element has
	// another length.
	errNoMessage = errors.New("protocodec: a message shared field by field is missing")
	errShape     = errors.New("protocodec: a slice shared element by element has another length than its encoding")
)
