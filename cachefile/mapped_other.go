//go:build !unix

package cachefile

// ReleaseMapped does nothing where madvise does not exist: the mapped
// pages a read touched stay in the process's working set until the
// system reclaims them.
func (db *DB) ReleaseMapped() error { return nil }
