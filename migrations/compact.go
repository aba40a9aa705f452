package migrations

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/failpoint"
)

// CompactOptions configure Compact.
type CompactOptions struct {
	// LockTimeout bounds the wait for another process's lock; zero means
	// cachefile.DefaultLockTimeout.
	LockTimeout time.Duration
	// TxMaxSize bounds the bytes copied per transaction; zero means
	// DefaultTxMaxSize.
	TxMaxSize int64
	// Force replaces an existing destination other than the source.
	Force bool
	// NoSync skips fsync (tests only).
	NoSync bool
}

// CompactReport says what Compact did.
type CompactReport struct {
	Src, Dst              string
	SizeBefore, SizeAfter int64
	Duration              time.Duration
}

// Compact copies the bbolt file src into a new file without its free pages
// (leaves filled as bbolt's Compact fills them), checks the copy, fsyncs it
// and renames it to dst. An empty dst, or dst naming src, compacts in place. The rename is the only
// change to dst, so after a crash dst is either the old file or the
// complete compacted one. Compact holds src's exclusive lock throughout and
// dst's too when it replaces an existing file (Force), so it fails with
// cachefile.ErrLocked while a process uses either. It works on any schema version.
func Compact(src, dst string, opts CompactOptions) (rep CompactReport, err error) {
	return CompactContext(context.Background(), src, dst, opts)
}

// CompactContext is Compact that stops when ctx ends (SIGINT): between two
// transactions of the copy, or before the rename; it then removes the
// partial copy, leaves src and dst as they were, and returns ctx's error.
func CompactContext(ctx context.Context, src, dst string, opts CompactOptions) (rep CompactReport, err error) {
	start := time.Now()
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = cachefile.DefaultLockTimeout
	}
	if opts.TxMaxSize <= 0 {
		opts.TxMaxSize = DefaultTxMaxSize
	}
	if dst == "" {
		dst = src
	}
	rep = CompactReport{Src: src, Dst: dst}
	defer func() { rep.Duration = time.Since(start) }()
	if dst, err = cachefile.Resolve(dst); err != nil {
		return rep, err
	}

	inPlace, err := sameFile(src, dst)
	if err != nil {
		return rep, err
	}
	if empty, err := zeroLength(src); err != nil || empty {
		if empty {
			err = fmt.Errorf("compact %s: %w: empty file", src, cachefile.ErrNotCacheFile)
		}
		return rep, err
	}
	db, err := openLocked(src, opts.LockTimeout, false, true)
	if err != nil {
		return rep, fmt.Errorf("compact: %w", err)
	}
	defer db.Close()
	if fi, err := os.Stat(src); err == nil {
		rep.SizeBefore = fi.Size()
	}
	if !inPlace {
		release, err := cachefile.ClaimDestination(dst, opts.Force, opts.LockTimeout)
		if err != nil {
			return rep, fmt.Errorf("compact %s to %s: %w", src, dst, err)
		}
		defer release()
	}
	version, err := fileVersion(db)
	if err != nil {
		return rep, fmt.Errorf("compact %s: %w", src, err)
	}
	// A damaged source is not copied: compaction would carry the damage
	// into a file that looks new.
	if err := db.View(func(tx *bolt.Tx) error { return checkFile(tx, version) }); err != nil {
		return rep, fmt.Errorf("compact %s: %w: the source fails its check (run cachectl check): %w", src, ErrCheckFailed, err)
	}

	work, err := createWork(dst+compactSuffix, rep.SizeBefore)
	if err != nil {
		return rep, err
	}
	err = compactCopy(ctx, work, db, opts.TxMaxSize)
	if err == nil {
		err = work.View(func(tx *bolt.Tx) error { return checkFile(tx, version) })
		if err != nil {
			err = fmt.Errorf("%w: %w", ErrCheckFailed, err)
		}
	}
	if err != nil {
		discardWork(work)
		return rep, fmt.Errorf("compact %s: %w", src, err)
	}
	failpoint.Inject("migrations.compactCopied") // bolt.Compact done and checked, not synced or renamed
	if err := commitWork(work, dst, opts.NoSync); err != nil {
		return rep, fmt.Errorf("compact %s: %w", src, err)
	}
	if fi, err := os.Stat(dst); err == nil {
		rep.SizeAfter = fi.Size()
	}
	return rep, nil
}

// sameFile reports whether a and b name the same file (b may not exist).
func sameFile(a, b string) (bool, error) {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true, nil
	}
	fa, err := os.Stat(a)
	if err != nil {
		return false, fmt.Errorf("compact %s: %w", a, err)
	}
	fb, err := os.Stat(b)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("compact to %s: %w", b, err)
	}
	return os.SameFile(fa, fb), nil
}
