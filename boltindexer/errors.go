package boltindexer

import "errors"

var (
	// ErrNotBolt means the file exists but is not a bbolt database.
	ErrNotBolt = errors.New("not a bbolt cache file")
	// ErrLocked means another process holds the file's lock.
	ErrLocked = errors.New("cache file is locked by another process")
	// ErrNewerSchema means the file was written by a newer schema than this build knows.
	ErrNewerSchema = errors.New("cache file has a newer schema than this build supports")
	// ErrNeedsMigration means the file has an older schema; run package migrations first.
	ErrNeedsMigration = errors.New("cache file has an older schema and must be migrated")
	// ErrClosed means the DB was closed.
	ErrClosed = errors.New("cache file is closed")
	// ErrReadOnly means a write was attempted on a DB opened read-only.
	ErrReadOnly = errors.New("cache file is opened read-only")
	// ErrNoMetadata means an object has no ObjectMeta (meta.Accessor failed).
	ErrNoMetadata = errors.New("object has no metadata")
	// ErrWrongType means an object is not of the type the store holds.
	ErrWrongType = errors.New("object is not of the store's type")
	// ErrNoObjectType means a store was opened without an example object.
	ErrNoObjectType = errors.New("store needs an example object type")
	// ErrCorruptRecord means a stored record or its payload failed to decode.
	ErrCorruptRecord = errors.New("corrupt record")
	// ErrCorruptFile means the file's structure or meta data is not what boltinformer writes.
	ErrCorruptFile = errors.New("corrupt cache file")
	// ErrIndexNotFound means the named index is not registered.
	ErrIndexNotFound = errors.New("index does not exist")
	// ErrIndexConflict means AddIndexers was given a name that is already registered.
	ErrIndexConflict = errors.New("indexer conflict")
	// ErrIndexFunc means an IndexFunc returned an error for an object.
	ErrIndexFunc = errors.New("index function failed")
	// ErrInvalidIndexValue means an index value or key contains the 0x00 separator.
	ErrInvalidIndexValue = errors.New("index value or key contains a NUL byte")
	// ErrInvalidStoreName means a store name is empty or contains a NUL byte.
	ErrInvalidStoreName = errors.New("invalid store name")
	// ErrNoRelist means FinishRelist or ApplyListPage was called without BeginRelist.
	ErrNoRelist = errors.New("no relist in progress")
	// ErrNotUpsert means ApplyListPage was given an op that is not OpUpsert.
	ErrNotUpsert = errors.New("a list page holds upserts only")
	// ErrInconsistent means an invariant check found a mismatch.
	ErrInconsistent = errors.New("store is inconsistent")
)
