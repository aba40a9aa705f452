//go:build !unix

package cachefile

import bolt "go.etcd.io/bbolt"

// ReleaseMapped does nothing where madvise does not exist: the mapped
// pages a read touched stay in the process's working set until the
// system reclaims them.
func (db *DB) ReleaseMapped() error { return nil }

// ReleaseMappedTx does nothing where madvise does not exist.
func ReleaseMappedTx(*bolt.Tx) error { return nil }
