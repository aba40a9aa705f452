package cachefile

import "sync"

// Build is one writer's part in a file built without fsync (Options.Unsynced):
// an informer's first relist of a new file. The file stays unsynced, behind
// its marker, until every Build begun on it is done, so that the informers
// that fill a new file together share its build instead of the first one to
// finish turning fsync on for the others' pages.
type Build struct {
	db *DB
	// once ends the Build's part in the count.
	once sync.Once
}

// builds counts the Builds of a DB that are not done.
type builds struct {
	// mu guards n.
	mu sync.Mutex
	n  int
}

// BeginBuild counts a writer that fills the file while it is unsynced;
// on a durable file it counts nothing, and its Done only returns nil.
func (db *DB) BeginBuild() *Build {
	b := &Build{db: db}
	db.builds.mu.Lock()
	defer db.builds.mu.Unlock()
	if db.unsynced.Load() {
		db.builds.n++
	} else {
		b.once.Do(func() {})
	}
	return b
}

// Done ends b's part in the build and, when no Build begun on the file is
// left, makes it durable (MakeDurable). While another Build is not done it
// returns nil at once and the file stays unsynced. It may be called again,
// after an error of MakeDurable in particular: it then only retries that.
func (b *Build) Done() error {
	b.once.Do(func() {
		b.db.builds.mu.Lock()
		b.db.builds.n--
		b.db.builds.mu.Unlock()
	})
	b.db.builds.mu.Lock()
	left := b.db.builds.n
	b.db.builds.mu.Unlock()
	if left > 0 {
		return nil
	}
	return b.db.MakeDurable()
}
