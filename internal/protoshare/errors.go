package protoshare

import "errors"

var (
	// ErrNotProtobuf is returned by Strip for bytes it cannot parse as
	// protobuf; the caller then decodes the old version in full, which
	// reports what is wrong with it.
	ErrNotProtobuf = errors.New("protoshare: not a protobuf message")

	// errNoMessage and errShape are returned by Apply when the new object
	// is not what its encoding decodes to: a message shared field by field
	// is missing, or a slice shared element by element has another length.
	errNoMessage = errors.New("protoshare: a message shared field by field is missing")
	errShape     = errors.New("protoshare: a slice shared element by element has another length than its encoding")
)
