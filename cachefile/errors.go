package cachefile

import "github.com/boltinformer/boltinformer/internal/cachefile"

// Every package of the module wraps these when an error is about the file
// itself; they are the very values the module uses internally, so
// errors.Is matches them whichever package returned the error.
var (
	// ErrNotCacheFile means the file is not a boltinformer cache file.
	ErrNotCacheFile = cachefile.ErrNotCacheFile
	// ErrLocked means another process holds the file's lock.
	ErrLocked = cachefile.ErrLocked
	// ErrNewerSchema means a newer build wrote the file in a schema this build cannot read or write.
	ErrNewerSchema = cachefile.ErrNewerSchema
	// ErrNeedsMigration means the file has an older schema: run package migrations (cachectl migrate) first.
	ErrNeedsMigration = cachefile.ErrNeedsMigration
	// ErrCorruptFile means the file is damaged: truncated, a bad page, or buckets boltinformer does not write.
	ErrCorruptFile = cachefile.ErrCorruptFile
	// ErrCorruptRecord means a stored record fails its checksum or does not decode.
	ErrCorruptRecord = cachefile.ErrCorruptRecord
	// ErrClosed means the file was closed.
	ErrClosed = cachefile.ErrClosed
	// ErrReadOnly means a write was attempted on a file opened read-only.
	ErrReadOnly = cachefile.ErrReadOnly
	// ErrNoStore means the file has no store of that name.
	ErrNoStore = cachefile.ErrNoStore
	// ErrNotDurable means an unsynced build left the file unfinished (its marker PATH.unsynced exists): it is not read.
	ErrNotDurable = cachefile.ErrNotDurable
	// ErrExists means a destination file exists and replacing it was not asked for.
	ErrExists = cachefile.ErrExists
)
