package cachefile

import (
	"time"

	"github.com/boltinformer/boltinformer/internal/cachefile"
)

// Version is the schema version this build writes. A file of an older
// version must be migrated first (ErrNeedsMigration); one of a newer
// version opens only when its writer says this build can read it.
const Version = cachefile.Version

// DefaultLockTimeout is how long an open waits for another process's lock
// when its options say zero.
const DefaultLockTimeout = cachefile.DefaultLockTimeout

// Options configure Open.
type Options struct {
	// LockTimeout bounds the wait for a process that has the file open for
	// writing; zero means DefaultLockTimeout. It is never infinite.
	LockTimeout time.Duration
}

// File is a cache file open read-only in this process. Its methods are
// safe for concurrent use; package boltindexer reads its stores (New) and
// package snapshot copies it (Save).
type File cachefile.DB

// Open opens the cache file at path read-only. It takes a shared lock, so
// while a process has the file open for writing it waits up to
// LockTimeout and fails with ErrLocked: read a live file through its
// process instead (boltinformer's Cache.Info, or the admin socket cachectl
// uses). Every page is validated before bbolt maps it, so a damaged file is
// ErrCorruptFile, never a fault. A file that is not a cache file, that an
// unsynced build left unfinished (ErrNotDurable), or of another schema
// (ErrNeedsMigration, ErrNewerSchema) is refused with an error that names
// the file and what is wrong. Nothing is ever written to it.
func Open(path string, opts Options) (*File, error) {
	db, err := cachefile.Open(path, cachefile.Options{ReadOnly: true, LockTimeout: opts.LockTimeout})
	return (*File)(db), err
}

func (f *File) db() *cachefile.DB { return (*cachefile.DB)(f) }

// Path returns the path the file was opened with.
func (f *File) Path() string { return f.db().Path() }

// Close closes the file and releases its lock.
func (f *File) Close() error { return f.db().Close() }

// Info describes the file and each of its stores from one read
// transaction, without decoding any object.
func (f *File) Info() (Info, error) {
	fi, err := f.db().Info()
	if err != nil {
		return Info{}, err
	}
	return infoOf(fi), nil
}
