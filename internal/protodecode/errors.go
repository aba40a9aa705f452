package protodecode

import "errors"

// The errors Decode returns, each wrapped with the message and field it
// was decoding. They are the conditions on which the generated code of
// Kubernetes API types fails too.
var (
	// ErrTruncated: a value runs past the end of its message.
	ErrTruncated = errors.New("protodecode: unexpected end of message")
	// ErrInvalidLength: a length is negative or overflows.
	ErrInvalidLength = errors.New("protodecode: invalid length")
	// ErrIntOverflow: a varint is longer than ten bytes.
	ErrIntOverflow = errors.New("protodecode: integer overflow")
	// ErrWireType: a field has another wire type than its Go type takes,
	// or a tag is illegal (field number 0, a stray end of group).
	ErrWireType = errors.New("protodecode: wrong wire type")
	// ErrGroup: a group is not closed, or closed where none is open.
	ErrGroup = errors.New("protodecode: unexpected end of group")
)
