package boltstore

import "errors"

// File-level errors (a locked, damaged or foreign file, a closed or
// read-only DB, a corrupt record) are package cachefile's; payload decode
// errors wrap cachefile.ErrCorruptRecord too.
var (
	// ErrEncrypted means a record's payload did not open: it is sealed with a
	// key the store does not have, or the key of that name is not the one
	// that sealed it (the error also wraps encryption.ErrUnknownKey or
	// encryption.ErrDecrypt and names the key id).
	ErrEncrypted = errors.New("record is encrypted")
	// ErrNoKeys means a store was asked to encrypt without a keyring.
	ErrNoKeys = errors.New("encryption needs a keyring")
	// ErrNoMetadata means an object has no ObjectMeta (meta.Accessor failed).
	ErrNoMetadata = errors.New("object has no metadata")
	// ErrWrongType means an object is not of the type the store holds.
	ErrWrongType = errors.New("object is not of the store's type")
	// ErrNoObjectType means a store was opened without an example object.
	ErrNoObjectType = errors.New("store needs an example object type")
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
	// ErrNoClusterID means SetCluster was given an empty cluster identity.
	ErrNoClusterID = errors.New("empty cluster identity")
	// ErrInconsistent means an invariant check found a mismatch.
	ErrInconsistent = errors.New("store is inconsistent")
)
