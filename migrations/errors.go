package migrations

import (
	"errors"

	v0 "github.com/boltinformer/boltinformer/migrations/internal/v0"
)

var (
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
)
