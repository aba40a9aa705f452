package cachefile

// This file holds the file-replacement steps that snapshot and migrations
// share: following a symbolic link to the file it names, making a rename
// durable, bbolt's page-level check run to its end, and claiming a
// destination without replacing a file another process uses.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

// maxLinks bounds the symbolic links Resolve follows (a loop ends there).
const maxLinks = 255

// Resolve returns the file a path names, following symbolic links, so that
// renaming a new file into place replaces the file and not a link to it,
// and a file's marker (unsynced.go) is found beside the file. A link to a
// file that does not exist yet resolves to the path it would be created
// at; a path that does not exist is returned as is.
func Resolve(path string) (string, error) {
	orig := path
	for range maxLinks {
		fi, err := os.Lstat(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return path, nil
		case err != nil:
			return "", fmt.Errorf("resolve %s: %w", orig, err)
		case fi.Mode()&fs.ModeSymlink == 0:
			return path, nil
		}
		target, err := os.Readlink(path)
		if err != nil {
			return "", fmt.Errorf("resolve %s: %w", orig, err)
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(path), target)
		}
		path = target
	}
	return "", fmt.Errorf("resolve %s: more than %d symbolic links", orig, maxLinks)
}

// SyncDir makes a rename, a new file or a removal in dir durable.
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

// ClaimDestination refuses an existing path unless force is set, and then
// holds the lock bbolt takes for a writer on it until release, so that a
// file in use by another process is never replaced. A lock held beyond
// timeout is ErrLocked. The lock is taken without bbolt, which would walk
// every page of the file it replaces: a damaged one is what a restore is
// often for.
func ClaimDestination(path string, force bool, timeout time.Duration) (release func(), err error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return func() {}, nil
	}
	if err != nil {
		return nil, err
	}
	if !force {
		return nil, fmt.Errorf("%w: %s (use force to replace it)", ErrExists, path)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is not a regular file", ErrExists, path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("claim %s: %w", path, err)
	}
	if err := flockExclusive(f, path, timeout); err != nil {
		_ = f.Close()
		if errors.Is(err, ErrLocked) {
			return nil, fmt.Errorf("%w: %s (waited %s)", ErrLocked, path, timeout)
		}
		return nil, err
	}
	return func() { _ = f.Close() }, nil
}
