package migrations

import (
	"errors"

	"github.com/boltinformer/boltinformer/boltindexer"
	"github.com/boltinformer/boltinformer/internal/fileutil"
	"github.com/boltinformer/boltinformer/migrations/internal/v0"
)

var (
	// ErrNewerSchema means the file was written by a newer schema than this
	// build knows; nothing was written to it (same as boltindexer.ErrNewerSchema).
	ErrNewerSchema = boltindexer.ErrNewerSchema
	// ErrLocked means another process holds the file's lock (same as boltindexer.ErrLocked).
	ErrLocked = boltindexer.ErrLocked
	// ErrNotBolt means the file is not a bbolt database (same as boltindexer.ErrNotBolt).
	ErrNotBolt = boltindexer.ErrNotBolt
	// ErrNoPath means no chain of known steps leads from the file's version to the target.
	ErrNoPath = errors.New("no migration path between schema versions")
	// ErrIrreversible means a downgrade needs a step that has no revert, or
	// data that the older layout cannot represent.
	ErrIrreversible = errors.New("migration step cannot be reverted")
	// ErrLayout means the file's content does not follow the layout of its schema version.
	ErrLayout = v0.ErrLayout
	// ErrCheckFailed means the file a step produced failed its check; the
	// original file was left in place.
	ErrCheckFailed = errors.New("migrated file failed its check")
	// ErrExists means the destination exists and overwriting it was not asked for.
	ErrExists = fileutil.ErrExists
)
