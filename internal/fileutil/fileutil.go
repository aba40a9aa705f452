// Package fileutil holds the file-replacement steps that snapshot and
// migrations share: following a symbolic link to the file it names, making
// a rename durable, and bbolt's page-level check run to its end. It never
// opens a cache file for writing.
package fileutil

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	bolt "go.etcd.io/bbolt"
)

// Resolve returns the file a path names, following symbolic links, so that
// renaming a new file into place replaces the file and not a link to it. A
// path that does not exist is returned as is.
func Resolve(path string) (string, error) {
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		return path, nil
	}
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", path, err)
	}
	return target, nil
}

// SyncDir makes a rename in dir durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// BoltCheck runs bbolt's page-level check to the end (its goroutine blocks
// until the channel is drained) and returns the first error.
func BoltCheck(tx *bolt.Tx) error {
	var first error
	n := 0
	for err := range tx.Check() {
		if first == nil {
			first = err
		}
		n++
	}
	if first != nil {
		return fmt.Errorf("bbolt: %d error(s), first: %w", n, first)
	}
	return nil
}
