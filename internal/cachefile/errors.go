package cachefile

import (
	"errors"
	"fmt"
)

var (
	// ErrNotCacheFile means the file is not a boltinformer cache file: not
	// bbolt at all, or another application's bbolt file.
	ErrNotCacheFile = errors.New("not a boltinformer cache file")
	// ErrLocked means another process holds the file's lock.
	ErrLocked = errors.New("cache file is locked by another process")
	// ErrNewerSchema means the file was written by a newer schema than this build knows.
	ErrNewerSchema = errors.New("cache file has a newer schema than this build supports")
	// ErrNeedsMigration means the file has an older schema; run package migrations first.
	ErrNeedsMigration = errors.New("cache file has an older schema and must be migrated")
	// ErrCorruptFile means the file is damaged: truncated, a bad meta or
	// page, or buckets that are not what boltinformer writes.
	ErrCorruptFile = errors.New("corrupt cache file")
	// ErrCorruptRecord means a stored record fails its checksum or does not decode.
	ErrCorruptRecord = errors.New("corrupt record")
	// ErrClosed means the DB was closed.
	ErrClosed = errors.New("cache file is closed")
	// ErrReadOnly means a write was attempted on a DB opened read-only.
	ErrReadOnly = errors.New("cache file is opened read-only")
	// ErrNoStore means the file has no store of that name.
	ErrNoStore = errors.New("store does not exist")
	// ErrNotDurable means the file was built without fsync and was not made
	// durable (its marker PATH.unsynced exists): it may be torn, and is
	// neither read, copied nor compacted; a writable open rebuilds it.
	ErrNotDurable = errors.New("cache file is not durable")
	// ErrExists means a destination file exists and replacing it was not asked for.
	ErrExists = errors.New("destination file exists")
)

// SchemaError is the error for a file of a newer schema than this build's
// that it cannot open as asked: its minimum reader (for a read-only open)
// or writer is newer than this build. It wraps ErrNewerSchema.
type SchemaError struct {
	Path   string
	Compat Compat
	// Write is true when the open was for writing.
	Write bool
}

func (e *SchemaError) Error() string {
	what, min := "read", e.Compat.MinReader
	if e.Write {
		what, min = "write", e.Compat.MinWriter
	}
	return fmt.Sprintf("open %s: %s: file is %s; this build is v%d and builds from v%d on %s it",
		e.Path, ErrNewerSchema, e.Compat, Version, min, what)
}

func (e *SchemaError) Unwrap() error { return ErrNewerSchema }
