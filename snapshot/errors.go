package snapshot

import (
	"errors"
)

var (
	// ErrNotSnapshot means the file does not start with the snapshot magic.
	ErrNotSnapshot = errors.New("not a boltinformer snapshot")
	// ErrUnsupportedFormat means the snapshot's format version is unknown to this build.
	ErrUnsupportedFormat = errors.New("unsupported snapshot format version")
	// ErrTruncated means the file is shorter than its header says.
	ErrTruncated = errors.New("snapshot is truncated")
	// ErrChecksum means the SHA-256 recorded in the snapshot does not match its content.
	ErrChecksum = errors.New("snapshot checksum mismatch")
	// ErrCorruptSnapshot means the header does not parse, or the cache file
	// inside fails bbolt's or boltinformer's checks or disagrees with the header.
	ErrCorruptSnapshot = errors.New("corrupt snapshot")
)
