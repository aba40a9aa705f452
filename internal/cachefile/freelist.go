package cachefile

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// A file is written with NoFreelistSync (docs/design.md): no commit writes
// bbolt's list of free pages, so a writable open rebuilds it by walking
// every page of the file, after ValidatePages has read them all once
// already. A clean Close therefore writes the list in one last
// transaction: the next writable open reads that one page instead of
// walking the file, and its first commit drops the list again (bbolt
// frees its page). A file left by a crash or a kill carries no list and
// is walked as before. ValidatePages checks a list found in the file
// (checkFreelist) before bbolt reads it.

// syncFreelist writes bbolt's free page list into the file. It runs in
// Close, after the commit loop has stopped, on a writable, durable DB
// (every writable open commits, so the file no longer holds the list).
func (db *DB) syncFreelist() error {
	if db.opts.ReadOnly {
		return nil
	}
	db.bolt.NoFreelistSync = false
	defer func() { db.bolt.NoFreelistSync = true }()
	if err := guard(db.path, func() error { return db.bolt.Update(func(*bolt.Tx) error { return nil }) }); err != nil {
		return fmt.Errorf("close %s: write the free page list: %w", db.path, err)
	}
	return nil
}
