package cachefile

import (
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
	"k8s.io/klog/v2"
)

// DefaultLockTimeout is how long Open waits for another process's lock.
const DefaultLockTimeout = 5 * time.Second

// Options configure a DB.
type Options struct {
	// LockTimeout bounds the wait for a file locked by another process.
	// Zero means DefaultLockTimeout; it is never infinite.
	LockTimeout time.Duration
	// ReadOnly opens the file with a shared lock and refuses writes.
	ReadOnly bool
	// NoSync skips fsync on commit (tests and benchmarks only: a crash can
	// then lose committed data and break the watermark invariant).
	NoSync bool
	// MaxBatch bounds how many queued write requests one transaction merges.
	// Zero means 64.
	MaxBatch int
	// Now returns the time written as updated-at; nil means time.Now.
	Now func() time.Time
	// InitialMmapSize is passed to bbolt (bytes); zero keeps bbolt's default.
	InitialMmapSize int
	// Unsynced builds a new file without fsync until MakeDurable (or a
	// clean Close), behind the marker PATH.unsynced (see unsynced.go). It
	// applies only when this open creates the file, or finds it empty;
	// an existing file is opened durable, and Unsynced reports false.
	Unsynced bool
	// Logger receives what Open does on its own (discarding a file left
	// unsynced); klog.Background() if zero.
	Logger logr.Logger
	// ValidateLazily (ReadOnly only) validates pages as reads reach them
	// rather than all of them at open: ViewLookups checks the pages of its
	// lookups, and the first View validates the whole file. A point read
	// of a large file (cachectl get NAME) then reads a few pages. A
	// damaged page is still an error before bbolt reads it, but Open no
	// longer reports it: the read that reaches it does.
	ValidateLazily bool
}

// DB is one cache file. It holds many stores and owns the commit loop that
// merges every store's writes into shared bbolt transactions.
type DB struct {
	bolt *bolt.DB
	// lazy validates pages as reads reach them (Options.ValidateLazily);
	// nil when Open validated every page.
	lazy *lazyPages
	// recordsWhole are the stores whose every record Open's page walk
	// found whole (recordcheck.go); set before Open returns, then only read.
	recordsWhole map[string]bool

	path string
	// file is the file path names, symbolic links followed: its marker
	// (unsynced.go) sits beside it.
	file string
	opts Options

	// writer is the commit loop (commit.go).
	writer writer
	// unsynced: the file is built without fsync and its marker exists.
	// Only the commit loop (or Close, after it) clears it and turns the
	// bolt DB's NoSync and NoGrowSync off, between transactions.
	unsynced atomic.Bool
	// syncFailed is the error of an fsync of the unsynced build that
	// failed: the build can no longer be made durable (makeDurable). Only
	// the commit loop (or Close, after it) reads and writes it.
	syncFailed error
	// discarded: Open emptied a file its unsynced build had left unfinished.
	discarded bool

	// closeOnce guards Close; closed is closed when Close starts.
	closeOnce sync.Once
	closed    chan struct{}

	// builds counts the writers filling the unsynced file (BeginBuild).
	builds builds
	// unsyncedCommits counts the commits of an unsynced build since its
	// dirty pages were last sent to the disk (writeBackUnsynced). Only the
	// commit loop uses it.
	unsyncedCommits int
}

// Open opens or creates the cache file at path (mode 0600). The file is
// validated before bbolt maps it. A file that is not a cache file, is
// damaged, is locked by another process beyond LockTimeout, or has another
// schema version is refused with an error from errors.go that names the
// file and what is wrong; nothing is written to it in those cases.
func Open(path string, opts Options) (*DB, error) {
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = DefaultLockTimeout
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 64
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger.GetSink() == nil {
		opts.Logger = klog.Background()
	}
	// The marker of an unsynced build sits beside the file, not beside a
	// link to it: every process finds it whichever path it opens.
	file, err := Resolve(path)
	if err != nil {
		return nil, fmt.Errorf("open cache file %s: %w", path, err)
	}
	var unsynced, discarded bool
	if !opts.ReadOnly {
		if unsynced, discarded, err = prepareUnsynced(file, opts.Unsynced && !opts.NoSync, opts.LockTimeout, opts.Logger); err != nil {
			return nil, err
		}
	}
	var records *recordCheck
	if !opts.ReadOnly {
		records = newRecordCheck()
	}
	b, lazy, err := openBolt(path, BoltOptions{
		records:         records,
		LockTimeout:     opts.LockTimeout,
		ReadOnly:        opts.ReadOnly,
		NoSync:          opts.NoSync || unsynced,
		InitialMmapSize: opts.InitialMmapSize,
		markerChecked:   !opts.ReadOnly,
		lazy:            opts.ReadOnly && opts.ValidateLazily,
	})
	if err != nil {
		// The marker stays: the file may be another writer's that is being
		// built unsynced (ErrLocked), and a stray marker only discards a
		// file that has nothing durable in it.
		return nil, err
	}
	db := &DB{
		bolt:   b,
		lazy:   lazy,
		path:   path,
		file:   file,
		opts:   opts,
		closed: make(chan struct{}),
	}
	db.writer.idle.L = &db.writer.mu
	db.unsynced.Store(unsynced)
	db.discarded = discarded
	if records != nil {
		db.recordsWhole = records.whole
	}
	if unsynced {
		// Under the lock now: another Open that found the marker before
		// this file existed removed it as stray; put it back before the
		// first unsynced commit.
		if err := ensureMarker(file); err != nil {
			_ = b.Close()
			return nil, err
		}
	}
	created, err := db.checkSchema()
	if err == nil && !opts.ReadOnly && !created {
		// Another process wrote the file between prepareUnsynced and the
		// lock: it is not new. A marker left by a writer that stopped
		// while this one waited guards pages still in the page cache (a
		// process that dies does not tear its file): one fsync makes them
		// durable, and the file is kept.
		marked, merr := unsyncedMarker(file)
		switch {
		case merr != nil:
			err = merr
		case unsynced || marked:
			db.unsynced.Store(true)
			err = db.makeDurable()
		}
	}
	if err == nil && created && !unsynced {
		err = dropStaleMarker(file)
	}
	if err != nil {
		_ = b.Close()
		return nil, err
	}
	return db, nil
}

// Path returns the file's path.
func (db *DB) Path() string { return db.path }

// ReadOnly reports whether the DB refuses writes.
func (db *DB) ReadOnly() bool { return db.opts.ReadOnly }

// Now is the DB's clock (Options.Now).
func (db *DB) Now() time.Time { return db.opts.Now() }

// Stats returns bbolt's statistics (free and pending pages for metrics).
func (db *DB) Stats() bolt.Stats { return db.bolt.Stats() }

// Close answers the writes already queued, refuses later ones (ErrClosed)
// and closes the file.
// A clean Close is a sync point: an unsynced file is made durable first;
// a writable file then gets its free page list (syncFreelist).
func (db *DB) Close() error {
	var err error
	db.closeOnce.Do(func() {
		close(db.closed)
		db.writer.mu.Lock()
		db.writer.closeAndWaitLocked()
		db.writer.mu.Unlock()
		if err = db.makeDurable(); err == nil {
			err = db.syncFreelist()
		}
		err = errors.Join(err, db.bolt.Close())
	})
	return err
}

// View runs fn in a bbolt read transaction. A fault or panic while bbolt
// reads a damaged page is returned as ErrCorruptFile instead of ending the
// process.
func (db *DB) View(fn func(tx *bolt.Tx) error) error {
	select {
	case <-db.closed:
		return ErrClosed
	default:
	}
	if db.lazy != nil {
		if err := db.lazy.validateWhole(); err != nil {
			return err
		}
	}
	return db.view(fn)
}

// ValidatesLazily reports whether reads of the DB must name what they
// read (ViewLookups) to avoid validating the whole file: it was opened
// with ValidateLazily, and no View has validated the whole file yet.
func (db *DB) ValidatesLazily() bool { return db.lazy != nil && !db.lazy.validated() }

// ViewLookups is View for a read that reads only what lookups name: on a
// file opened with ValidateLazily it validates the pages those lookups
// reach, not the whole file (View's first call does that). fn must read
// nothing else: a page it reaches beyond them was not validated.
func (db *DB) ViewLookups(lookups []Lookup, fn func(tx *bolt.Tx) error) error {
	select {
	case <-db.closed:
		return ErrClosed
	default:
	}
	if db.lazy != nil {
		if err := db.lazy.check(lookups); err != nil {
			return err
		}
	}
	return db.view(fn)
}

func (db *DB) view(fn func(tx *bolt.Tx) error) error {
	err := guard(db.path, func() error { return db.bolt.View(fn) })
	if errors.Is(err, bolterrors.ErrDatabaseNotOpen) {
		// Close ran between the check of closed and the transaction.
		return fmt.Errorf("%w (%w)", ErrClosed, err)
	}
	return err
}

// guard runs fn with memory faults turned into panics, and a panic into
// an ErrCorruptFile error naming path. bbolt trusts its pages: a damaged
// one makes it panic or fault, never return an error.
func guard(path string, fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: %w: %v", path, ErrCorruptFile, r)
		}
	}()
	return fn()
}
