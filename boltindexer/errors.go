package boltindexer

import "github.com/boltinformer/boltinformer/internal/boltstore"

// The errors a Store's methods return wrap these sentinels (they are the
// implementation's own values, so errors.Is matches either name). File-level
// errors (a locked, damaged or foreign file, a closed or read-only file, a
// corrupt record, no such store) are package cachefile's.
var (
	// ErrEncrypted means a record's payload did not open: it is sealed with a
	// key the store does not have, or with another key of the same name (the
	// error names the key id).
	ErrEncrypted = boltstore.ErrEncrypted
	// ErrWrongType means an object is not of the type the store holds.
	ErrWrongType = boltstore.ErrWrongType
	// ErrNoObjectType means Options.Object is missing or not a pointer to
	// a struct.
	ErrNoObjectType = boltstore.ErrNoObjectType
	// ErrIndexNotFound means the named index is not registered.
	ErrIndexNotFound = boltstore.ErrIndexNotFound
	// ErrIndexConflict means AddIndexers was given a name that is already
	// registered.
	ErrIndexConflict = boltstore.ErrIndexConflict
	// ErrIndexFunc means an IndexFunc returned an error for an object
	// (client-go's indexer panics there; nothing is written).
	ErrIndexFunc = boltstore.ErrIndexFunc
	// ErrInvalidIndexValue means an index value or a key contains a NUL byte.
	ErrInvalidIndexValue = boltstore.ErrInvalidIndexValue
	// ErrInvalidStoreName means a store name is empty or contains a NUL byte.
	ErrInvalidStoreName = boltstore.ErrInvalidStoreName
)
