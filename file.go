package boltinformer

import (
	"context"

	"github.com/boltinformer/boltinformer/cachefile"
	"github.com/boltinformer/boltinformer/snapshot"
)

// Info describes the cache file and each of its stores (what it caches, its
// resourceVersion, object count and relist state) from one read
// transaction, which never waits for the informers' commits.
func (c *Cache) Info() (cachefile.Info, error) { return c.file().Info() }

// Snapshot writes a consistent copy of the cache file to path while the
// informers keep committing (snapshot.Save: read there what a long
// snapshot costs the file). A new file is built without fsync until its
// first informer has synced; until then Snapshot fails with
// cachefile.ErrNotDurable.
func (c *Cache) Snapshot(ctx context.Context, path string) (snapshot.Header, error) {
	return snapshot.Save(ctx, c.file(), path, snapshot.SaveOptions{Now: c.opts.Now})
}

// file is the cache file as package cachefile presents it to readers.
func (c *Cache) file() *cachefile.File { return (*cachefile.File)(c.db) }
