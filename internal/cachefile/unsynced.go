package cachefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"

	"github.com/boltinformer/boltinformer/internal/failpoint"
)

// A new file is built without fsync until its first informer has synced
// (Options.Unsynced): the commits of a cold LIST then cost CPU, not disk
// flushes. Such a file is not durable: a power loss can leave it torn. The
// marker file PATH.unsynced, created and fsynced before the cache file
// exists, says so on disk; MakeDurable (or a clean Close) fsyncs the cache
// file and only then removes the marker. A writable Open that finds the
// marker beside an existing file discards that file and starts it again
// (a cold start, one LIST); every other open refuses it (ErrNotDurable).
// The marker sits beside the file itself, whatever symbolic link a
// process opens it through (Open resolves the path first).
//
// A marker holds its file's base name, and writeMarker returns only once
// the marker and its directory entry are fsynced; the file is created, and
// its first commit without fsync made, only after that. A marker that is
// empty therefore never reached the disk whole (a power loss between its
// creation and its fsync), and no commit without fsync was made under it:
// the file beside it is absent, empty, or as durable as a file without a
// marker. An empty marker is no marker: every open ignores it, and a
// writable open removes it and keeps the file.

// UnsyncedSuffix is appended to a cache file's path to name its marker.
const UnsyncedSuffix = ".unsynced"

// MarkerPath returns the path of the marker of the cache file at path
// (symbolic links resolved: see Resolve).
func MarkerPath(path string) string { return path + UnsyncedSuffix }

// unsyncedMarker reports whether a marker of path that names a file
// exists: an empty one guards nothing.
func unsyncedMarker(path string) (bool, error) {
	exists, empty, err := readMarker(path)
	return exists && !empty, err
}

// readMarker reports whether the marker of path exists, and whether it is
// empty.
func readMarker(path string) (exists, empty bool, err error) {
	b, err := os.ReadFile(MarkerPath(path))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, false, nil
	case err != nil:
		return false, false, fmt.Errorf("look for marker %s: %w", MarkerPath(path), err)
	}
	return true, strings.TrimSpace(string(b)) == "", nil
}

// removeEmptyMarker removes the empty marker of path, keeping the file.
func removeEmptyMarker(path string, logger logr.Logger) error {
	if err := RemoveMarker(path); err != nil {
		return err
	}
	logger.Info("Removed an empty unsynced marker: its write never reached the disk, so nothing was written without fsync under it; the cache file is kept",
		"path", path, "marker", MarkerPath(path))
	return nil
}

// notDurableError is the error for the file at path (file, links
// followed) whose marker says it may be torn.
func notDurableError(path, file string) error {
	return fmt.Errorf("open %s: %w: marker %s exists, the file was being built without fsync when its writer stopped (a writable open discards it and rebuilds it with a LIST)", path, ErrNotDurable, MarkerPath(file))
}

// prepareUnsynced runs before a writable Open maps the file. A marker left
// by an unsynced build that did not finish discards what it guarded (the
// file is emptied under its exclusive lock) and is removed; an empty
// marker guarded nothing and is removed alone. Then, when
// want is set and there is no file yet (or an empty one: nothing in it to
// lose), it creates and fsyncs the marker and the directory, and reports
// that this open builds the file unsynced. discarded reports that it
// emptied a file.
func prepareUnsynced(path string, want bool, timeout time.Duration, logger logr.Logger) (unsynced, discarded bool, err error) {
	marked, empty, err := readMarker(path)
	if err != nil {
		return false, false, err
	}
	switch {
	case marked && empty:
		if err := removeEmptyMarker(path, logger); err != nil {
			return false, false, err
		}
	case marked:
		if discarded, err = discardUnsynced(path, timeout, logger); err != nil {
			return false, false, err
		}
	}
	if !want {
		return false, discarded, nil
	}
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return false, discarded, fmt.Errorf("open cache file %s: %w", path, err)
	case !fi.Mode().IsRegular() || fi.Size() != 0:
		// A file with data (or not a file at all): kept durable.
		return false, discarded, nil
	}
	if err := writeMarker(path); err != nil {
		return false, discarded, err
	}
	return true, discarded, nil
}

// writeMarker creates the marker of path, holding the file's base name,
// and makes it and its directory entry durable.
func writeMarker(path string) error {
	m := MarkerPath(path)
	f, err := os.OpenFile(m, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("create marker %s: %w", m, err)
	}
	_, werr := f.WriteString(filepath.Base(path) + "\n")
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		return fmt.Errorf("create marker %s: %w", m, err)
	}
	return SyncDir(filepath.Dir(path))
}

// ensureMarker writes the marker of path again if it is gone.
func ensureMarker(path string) error {
	marked, err := unsyncedMarker(path)
	if err != nil || marked {
		return err
	}
	return writeMarker(path)
}

// RemoveMarker removes the marker of path and makes that durable. Besides
// MakeDurable, it is for a tool that put a durable file in place of one
// whose unsynced build had stopped (snapshot restore).
func RemoveMarker(path string) error {
	if err := os.Remove(MarkerPath(path)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove marker %s: %w", MarkerPath(path), err)
	}
	return SyncDir(filepath.Dir(path))
}

// discardUnsynced handles a marker found before a writable open. Without
// a cache file it leaves the marker. With one, it takes the file's
// exclusive lock (a writer still building it holds that lock: ErrLocked
// after timeout), checks again that the marker is there and names this
// very file, empties the file (it keeps its inode, so another process
// waiting for the lock opens the same file) and fsyncs it, logs which file
// was discarded, and removes the marker. A file without a marker is never
// touched here.
func discardUnsynced(path string, timeout time.Duration, logger logr.Logger) (discarded bool, err error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		// The marker may be another writer's, written just before it
		// creates the file: it stays. A stale one is removed by the open
		// that creates the file (dropStaleMarker) or replaced by an
		// unsynced build's own.
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("open cache file %s: %w", path, err)
	}
	defer f.Close()
	if err := flockExclusive(f, path, timeout); err != nil {
		return false, err
	}
	// Under the lock: the writer that made the marker may have made the
	// file durable and removed it while this process waited.
	marked, err := unsyncedMarker(path)
	if err != nil || !marked {
		return false, err
	}
	if err := markerNames(path, f); err != nil {
		return false, err
	}
	fi, err := f.Stat()
	if err != nil {
		return false, fmt.Errorf("stat %s: %w", path, err)
	}
	if err := f.Truncate(0); err != nil {
		return false, fmt.Errorf("discard %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return false, fmt.Errorf("discard %s: %w", path, err)
	}
	logger.Error(ErrNotDurable, "Discarded a cache file that was being built without fsync when its writer stopped (it may be torn); starting it again from a full LIST",
		"path", path, "marker", MarkerPath(path), "discardedBytes", fi.Size())
	return fi.Size() > 0, RemoveMarker(path)
}

// dropStaleMarker removes a marker found beside a file this open has just
// created, durable, under its lock: no unsynced build can be guarding the
// file (one would hold the lock, or have found the file made), so the
// marker is a stray one, left by a writer that stopped before it created
// the file. Left there, it would have the next writable open discard this
// durable file.
func dropStaleMarker(path string) error {
	marked, err := unsyncedMarker(path)
	if err != nil || !marked {
		return err
	}
	return RemoveMarker(path)
}

// markerNames checks that the marker of path names the file f holds: the
// base name it records, looked up in the marker's directory, is f's file.
func markerNames(path string, f *os.File) error {
	m := MarkerPath(path)
	b, err := os.ReadFile(m)
	if err != nil {
		return fmt.Errorf("read marker %s: %w", m, err)
	}
	name := strings.TrimSpace(string(b))
	named, nerr := os.Stat(filepath.Join(filepath.Dir(m), name))
	held, herr := f.Stat()
	if name == "" || strings.ContainsRune(name, filepath.Separator) || nerr != nil || herr != nil || !os.SameFile(named, held) {
		return fmt.Errorf("open %s: %w: marker %s names %q, not this file; remove the marker by hand if the file is to be kept, or the file if not", path, ErrNotDurable, m, name)
	}
	return nil
}

// DiscardedUnsynced reports whether Open emptied the file because its
// unsynced build had been left unfinished (it may have been torn): every
// store of it starts again from a LIST.
func (db *DB) DiscardedUnsynced() bool { return db.discarded }

// Unsynced reports whether the file is still being built without fsync
// (Options.Unsynced on a new file, before MakeDurable).
func (db *DB) Unsynced() bool { return db.unsynced.Load() }

// MakeDurable ends an unsynced build: it fsyncs the file (everything
// committed so far), removes the marker and fsyncs the directory, and
// turns fsync on for the commits that follow. It runs in the commit loop,
// between transactions. It does nothing on a durable DB. While it fails
// the DB stays unsynced. It may be called again after an error, except
// after a failed fsync of the file: then it keeps returning that error
// (wrapping ErrNotDurable), since what the fsync did not write back may be
// lost and a later fsync would not say so; the marker stays, and the next
// writable Open rebuilds the file.
func (db *DB) MakeDurable() error {
	if !db.unsynced.Load() {
		return nil
	}
	return db.submit(&Write{durable: true})
}

// makeDurable is MakeDurable in the commit loop (or in Close, after it).
func (db *DB) makeDurable() error {
	if !db.unsynced.Load() {
		return nil
	}
	if db.syncFailed != nil {
		return db.syncFailed
	}
	failpoint.Inject("cachefile.beforeDurable")
	if err := db.bolt.Sync(); err != nil {
		db.syncFailed = fmt.Errorf("make %s durable: %w: its fsync failed (%w); pages it did not write back may be lost, and a later fsync would not report it, so the file stays marked and the next writable open rebuilds it", db.path, ErrNotDurable, err)
		return db.syncFailed
	}
	failpoint.Inject("cachefile.beforeRemoveMarker")
	if err := RemoveMarker(db.file); err != nil {
		return fmt.Errorf("make %s durable: %w", db.path, err)
	}
	db.bolt.NoSync, db.bolt.NoGrowSync = db.opts.NoSync, db.opts.NoSync
	db.unsynced.Store(false)
	return nil
}
