package migrations

import (
	"time"

	bolt "go.etcd.io/bbolt"
)

// CheckVersion runs the check of schema version v on the closed file at
// path (for the tests of package migrations_test).
func CheckVersion(path string, v uint64) error {
	db, err := openLocked(path, time.Second, true, true)
	if err != nil {
		return err
	}
	defer db.Close()
	return db.View(func(tx *bolt.Tx) error { return checkFile(tx, v) })
}

// WithWriter returns o recording writer as the meta writer-version.
func WithWriter(o Options, writer string) Options {
	o.writer = writer
	return o
}
