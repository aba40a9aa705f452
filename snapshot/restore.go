package snapshot

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"

	icachefile "github.com/boltinformer/boltinformer/internal/cachefile"
)

// RestoreOptions configure Restore.
type RestoreOptions struct {
	// Force replaces an existing file at the destination. A file in use by
	// a process is never replaced: Restore holds its bbolt lock while it
	// works and fails with cachefile.ErrLocked if it cannot get it.
	Force bool
	// LockTimeout bounds the wait for that lock; zero means
	// cachefile.DefaultLockTimeout.
	LockTimeout time.Duration
	// NoSync skips fsync of the restored file and its directory (tests only).
	NoSync bool
}

// Restore writes the cache file held by the snapshot at snapshotPath to
// dbPath. It copies the database into a temporary file next to dbPath
// while computing the snapshot's SHA-256, refuses a mismatch
// (ErrChecksum), runs the checks of cachefile.Check on the copy and
// compares each store's RV and object count with the header
// (ErrCorruptSnapshot), then fsyncs it and renames it to dbPath. After a
// crash dbPath holds its old content (or nothing) or the whole restored
// file; a "<dbPath>.restore-*" file may be left behind and is safe to
// delete. An existing dbPath is refused with cachefile.ErrExists unless
// opts.Force.
//
// The restored file is an ordinary cache file at the snapshot's RVs: an
// informer opened on it starts warm and resumes watching from each
// store's RV, or relists (diffing against the restored objects) if the
// apiserver no longer serves that RV. A snapshot of an older schema
// restores as is and must then be migrated (package migrations); a newer
// one is refused with cachefile.ErrNewerSchema.
func Restore(snapshotPath, dbPath string, opts RestoreOptions) (Header, error) {
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = icachefile.DefaultLockTimeout
	}
	r, err := openSnapshot(snapshotPath)
	if err != nil {
		return Header{}, fmt.Errorf("restore: %w", err)
	}
	defer r.close()
	hdr := r.header
	if hdr.SchemaVersion > icachefile.Version {
		return Header{}, fmt.Errorf("restore %s: %w: snapshot is schema v%d, this build supports up to v%d",
			snapshotPath, icachefile.ErrNewerSchema, hdr.SchemaVersion, icachefile.Version)
	}
	if dbPath, err = icachefile.Resolve(dbPath); err != nil {
		return Header{}, err
	}
	// A node seeded from a peer's snapshot may not have the cache's directory yet.
	if err := os.MkdirAll(filepath.Dir(dbPath), 0o700); err != nil {
		return Header{}, fmt.Errorf("restore %s to %s: %w", snapshotPath, dbPath, err)
	}
	release, err := icachefile.ClaimDestination(dbPath, opts.Force, opts.LockTimeout)
	if err != nil {
		return Header{}, fmt.Errorf("restore %s to %s: %w", snapshotPath, dbPath, err)
	}
	defer release()

	f, err := os.CreateTemp(filepath.Dir(dbPath), filepath.Base(dbPath)+".restore-*")
	if err != nil {
		return Header{}, fmt.Errorf("restore %s to %s: %w", snapshotPath, dbPath, err)
	}
	tmp := f.Name()
	if err := restoreInto(r, f, opts.NoSync); err != nil {
		_ = os.Remove(tmp)
		return Header{}, fmt.Errorf("restore %s to %s: %w", snapshotPath, dbPath, err)
	}
	err = os.Rename(tmp, dbPath)
	if err == nil && !opts.NoSync {
		err = icachefile.SyncDir(filepath.Dir(dbPath))
	}
	if err != nil {
		_ = os.Remove(tmp)
		return Header{}, fmt.Errorf("restore %s to %s: %w", snapshotPath, dbPath, err)
	}
	// The file it replaced may have been left by an unsynced build that
	// stopped; its marker must not discard the restored one.
	if err := icachefile.RemoveMarker(dbPath); err != nil {
		return Header{}, fmt.Errorf("restore %s to %s: %w", snapshotPath, dbPath, err)
	}
	return hdr, nil
}

// restoreInto copies the database into f, verifies the checksum, makes f
// durable and closes it, then checks the copy.
func restoreInto(r *reader, f *os.File, noSync bool) error {
	bw := bufio.NewWriterSize(f, 1<<20)
	recorded, computed, err := r.copyDatabase(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil && !bytes.Equal(recorded, computed) {
		err = fmt.Errorf("%w: snapshot %s records %s, its content hashes to %s", ErrChecksum, r.path, hexString(recorded), hexString(computed))
	}
	if err == nil && !noSync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return checkRestored(f.Name(), r.header)
}

// checkRestored opens the restored copy read-only and checks it against
// bbolt's and boltinformer's invariants and against the header.
func checkRestored(path string, hdr Header) error {
	// OpenBolt validates every page before bbolt reads one: bbolt's check
	// walks them in a goroutine whose panic no caller can recover, and a
	// snapshot of a damaged file carries a valid checksum.
	db, err := icachefile.OpenBolt(path, icachefile.BoltOptions{ReadOnly: true, LockTimeout: time.Second})
	if err != nil {
		return fmt.Errorf("%w: the database inside does not open: %w", ErrCorruptSnapshot, err)
	}
	defer db.Close()
	return db.View(func(tx *bolt.Tx) error {
		if err := icachefile.BoltCheck(tx); err != nil {
			return fmt.Errorf("%w: %v", ErrCorruptSnapshot, err)
		}
		if hdr.SchemaVersion != icachefile.Version {
			// An older layout: migrations checks the rest when it
			// upgrades the file.
			return nil
		}
		if ps := icachefile.CheckTx(tx, icachefile.CheckOptions{MaxProblems: 10, SkipBolt: true}); len(ps) > 0 {
			return fmt.Errorf("%w: %d problem(s), first: %s", ErrCorruptSnapshot, len(ps), ps[0])
		}
		fi, err := icachefile.InfoTx(tx)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrCorruptSnapshot, err)
		}
		return compareHeader(hdr, headerFromInfo(fi))
	})
}

// compareHeader reports where the restored file disagrees with the header.
func compareHeader(want, got Header) error {
	if got.SchemaVersion != want.SchemaVersion {
		return fmt.Errorf("%w: file is schema v%d, header says v%d", ErrCorruptSnapshot, got.SchemaVersion, want.SchemaVersion)
	}
	if len(got.Stores) != len(want.Stores) {
		return fmt.Errorf("%w: file has %d stores, header says %d", ErrCorruptSnapshot, len(got.Stores), len(want.Stores))
	}
	for i, w := range want.Stores {
		g := got.Stores[i]
		if g.Name != w.Name || g.RV != w.RV || g.Objects != w.Objects || g.Relisting != w.Relisting {
			return fmt.Errorf("%w: store %s at rv %q with %d objects, header says store %s at rv %q with %d objects",
				ErrCorruptSnapshot, g.Name, g.RV, g.Objects, w.Name, w.RV, w.Objects)
		}
	}
	return nil
}
