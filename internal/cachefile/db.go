package cachefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
	"k8s.io/klog/v2"
)

// WriterVersion is recorded in the meta bucket by every process that opens
// a file for writing: it names the schema this build writes, so that a file
// says which build last wrote it.
var WriterVersion = "boltinformer/v" + strconv.FormatUint(Version, 10)

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
	path string
	// file is the file path names, symbolic links followed: its marker
	// (unsynced.go) sits beside it.
	file string
	opts Options

	// requests feeds the commit loop; stop and done end it (Close).
	requests chan *Write
	// durable asks the commit loop to make an unsynced file durable.
	durable chan chan error
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
	stop      chan struct{}
	done      chan struct{}

	// closeOnce guards Close; closed is closed when Close starts.
	closeOnce sync.Once
	closed    chan struct{}
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
	b, lazy, err := openBolt(path, BoltOptions{
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
		bolt:     b,
		lazy:     lazy,
		path:     path,
		file:     file,
		opts:     opts,
		requests: make(chan *Write),
		durable:  make(chan chan error),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
		closed:   make(chan struct{}),
	}
	db.unsynced.Store(unsynced)
	db.discarded = discarded
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
	go db.commitLoop()
	return db, nil
}

// BoltOptions configure OpenBolt.
type BoltOptions struct {
	LockTimeout time.Duration
	ReadOnly    bool
	// NoSync turns off the fsync of each commit and the one after the file
	// grows: a file without the first has nothing to keep durable with the
	// second (an unsynced build fsyncs once, in MakeDurable).
	NoSync          bool
	InitialMmapSize int
	// MustExist refuses to create a missing file (always so when ReadOnly).
	MustExist bool
	// markerChecked: Open dealt with the marker of an unsynced build
	// already; otherwise a file with a marker is refused (ErrNotDurable).
	markerChecked bool
	// lazy (ReadOnly only): validate the meta pages only, and return the
	// lazyPages that validate the others as reads reach them.
	lazy bool
}

// OpenBolt validates the file at path and opens it with bbolt and the
// options every boltinformer file uses (hashmap freelist, NoFreelistSync).
// It is for tools that work below the store level (migrations); it does not
// look at the schema.
//
// Every page bbolt can reach is validated (ValidatePages), read-only opens
// included: bbolt reads pages lazily and trusts them, a writable open walks
// them all in a goroutine whose panic no caller can recover, and so does
// Tx.Check on any open. The file is validated under the lock bbolt then
// holds (taken on the very file bbolt opens), so a file being written by
// another process is reported as ErrLocked, never as damaged, and no
// writer changes it between the validation and bbolt's open.
func OpenBolt(path string, opts BoltOptions) (*bolt.DB, error) {
	opts.lazy = false
	b, _, err := openBolt(path, opts)
	return b, err
}

// openBolt is OpenBolt, and with opts.lazy it validates the meta pages
// only and returns what validates the others.
func openBolt(path string, opts BoltOptions) (*bolt.DB, *lazyPages, error) {
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = DefaultLockTimeout
	}
	fi, err := os.Stat(path)
	switch {
	case err != nil && !(errors.Is(err, fs.ErrNotExist) && !opts.ReadOnly && !opts.MustExist):
		return nil, nil, fmt.Errorf("open cache file %s: %w", path, err)
	case err == nil && !fi.Mode().IsRegular():
		return nil, nil, fmt.Errorf("open %s: %w: not a regular file", path, ErrNotCacheFile)
	case err == nil && fi.Size() == 0 && opts.ReadOnly:
		return nil, nil, fmt.Errorf("open %s: %w: the file is empty", path, ErrNotCacheFile)
	}
	// openErr is the error of openValidated, returned as it is rather than
	// wrapped by bbolt's open.
	var openErr error
	var lazy *lazyPages
	openValidated := func(name string, flag int, perm os.FileMode) (*os.File, error) {
		f, err := os.OpenFile(name, flag, perm)
		if err != nil {
			return nil, err
		}
		if err := flockBolt(f, path, opts.ReadOnly, opts.LockTimeout); err != nil {
			_ = f.Close()
			openErr = err
			return nil, err
		}
		mode := ValidatePages
		if opts.lazy && opts.ReadOnly {
			mode = ValidateMeta
		}
		if _, err := validateFile(f, path, mode); err != nil {
			_ = f.Close()
			openErr = err
			return nil, err
		}
		if mode == ValidateMeta {
			// bbolt keeps f open, and its shared lock, until Close.
			fi, err := f.Stat()
			if err == nil {
				var m boltMeta
				if m, err = readMeta(f, fi.Size()); err == nil {
					lazy = &lazyPages{f: f, path: path, meta: m}
				}
			}
			if err != nil {
				_ = f.Close()
				openErr = fmt.Errorf("%s: %w", path, err)
				return nil, openErr
			}
		}
		return f, nil
	}
	b, err := bolt.Open(path, 0o600, &bolt.Options{
		Timeout:         opts.LockTimeout,
		ReadOnly:        opts.ReadOnly,
		NoSync:          opts.NoSync,
		NoGrowSync:      opts.NoSync,
		NoFreelistSync:  true,
		FreelistType:    bolt.FreelistMapType,
		InitialMmapSize: opts.InitialMmapSize,
		PageSize:        PageSize,
		OpenFile:        openValidated,
	})
	if openErr != nil {
		return nil, nil, openErr
	}
	if err != nil {
		return nil, nil, classifyOpenError(path, opts.LockTimeout, err)
	}
	if !opts.markerChecked {
		// Under bbolt's lock, so a writer building the file is not running.
		file, err := Resolve(path)
		var marked bool
		if err == nil {
			marked, err = unsyncedMarker(file)
		}
		if err == nil && marked {
			err = notDurableError(path, file)
		}
		if err != nil {
			_ = b.Close()
			return nil, nil, err
		}
	}
	b.AllocSize = AllocSize
	return b, lazy, nil
}

func classifyOpenError(path string, timeout time.Duration, err error) error {
	switch {
	case errors.Is(err, bolterrors.ErrTimeout):
		return lockedError(path, timeout)
	case errors.Is(err, bolterrors.ErrInvalid), errors.Is(err, bolterrors.ErrVersionMismatch), errors.Is(err, bolterrors.ErrChecksum):
		return fmt.Errorf("open %s: %w: %v", path, ErrNotCacheFile, err)
	}
	return fmt.Errorf("open %s: %w", path, err)
}

func lockedError(path string, timeout time.Duration) error {
	return fmt.Errorf("open %s: %w (waited %s; if a process is serving it, read it through its admin socket)", path, ErrLocked, timeout)
}

// checkSchema initialises an empty file at Version and refuses any other
// version. It never modifies a file that holds data. created reports that
// it initialised the file.
func (db *DB) checkSchema() (created bool, err error) {
	var version uint64
	var initialised bool
	var compat Compat
	read := func(tx *bolt.Tx) error {
		var err error
		if version, initialised, err = SchemaVersion(tx); err != nil || version == 0 {
			return err
		}
		compat, err = ReadCompat(tx.Bucket(MetaBucket))
		return err
	}
	// A file without a meta bucket makes SchemaVersion read every
	// top-level bucket: the lookups of the meta bucket do not cover that.
	var hasMeta bool
	err = db.ViewLookups(fileLookups, func(tx *bolt.Tx) error {
		if hasMeta = tx.Bucket(MetaBucket) != nil; hasMeta {
			return read(tx)
		}
		return nil
	})
	if err == nil && !hasMeta {
		err = db.View(read)
	}
	if err != nil {
		return false, fmt.Errorf("open %s: %w", db.path, err)
	}
	switch {
	case !initialised && db.opts.ReadOnly:
		return false, fmt.Errorf("open %s: %w: an empty bbolt file with no boltinformer meta data", db.path, ErrNotCacheFile)
	case !initialised:
		return true, db.bolt.Update(func(tx *bolt.Tx) error {
			meta, err := tx.CreateBucket(MetaBucket)
			if err != nil {
				return fmt.Errorf("initialise %s: %w", db.path, err)
			}
			if _, err := tx.CreateBucket(StoresBucket); err != nil {
				return fmt.Errorf("initialise %s: %w", db.path, err)
			}
			now := db.opts.Now().UTC().Format(time.RFC3339)
			for _, kv := range append([][2][]byte{
				{MetaSchemaVersion, []byte(strconv.FormatUint(Version, 10))},
				{MetaCreatedAt, []byte(now)},
				{MetaWriterVersion, []byte(WriterVersion)},
			}, CompatEntries(Version)...) {
				if err := meta.Put(kv[0], kv[1]); err != nil {
					return fmt.Errorf("initialise %s: %w", db.path, err)
				}
			}
			return nil
		})
	case version > Version && (db.opts.ReadOnly && !compat.Readable() || !db.opts.ReadOnly && !compat.Writable()):
		return false, &SchemaError{Path: db.path, Compat: compat, Write: !db.opts.ReadOnly}
	case version < Version:
		// No hint here: the caller knows how the file gets migrated
		// (boltinformer.Open does it by itself, cachectl names its command).
		return false, fmt.Errorf("open %s: %w: file is schema v%d, this build needs v%d", db.path, ErrNeedsMigration, version, Version)
	}
	if db.opts.ReadOnly {
		return false, nil
	}
	return false, db.bolt.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(MetaBucket)
		entries := [][2][]byte{{MetaWriterVersion, []byte(WriterVersion)}}
		if version == Version {
			// A newer file keeps the minimums its writer chose; a file of
			// this schema written before they existed gets them.
			entries = append(entries, CompatEntries(Version)...)
		}
		for _, kv := range entries {
			if err := meta.Put(kv[0], kv[1]); err != nil {
				return err
			}
		}
		return nil
	})
}

// SchemaVersion reports the schema version of a file. initialised is false
// for a bbolt file with no buckets at all. A file with buckets but no meta
// bucket is schema v0 (the layout before meta existed) when every top-level
// bucket is laid out as a v0 store; otherwise it is another application's
// file (ErrNotCacheFile).
func SchemaVersion(tx *bolt.Tx) (version uint64, initialised bool, err error) {
	meta := tx.Bucket(MetaBucket)
	if meta == nil {
		empty := true
		err = tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			empty = false
			if b == nil {
				// A key, not a bucket, at the top level (bbolt passes nil).
				return fmt.Errorf("%w: top-level key %q is not a bucket and there is no meta bucket", ErrNotCacheFile, name)
			}
			if b.Bucket([]byte("objects")) == nil || b.Bucket([]byte("index")) == nil {
				return fmt.Errorf("%w: bucket %q is not a boltinformer store and there is no meta bucket", ErrNotCacheFile, name)
			}
			return nil
		})
		return 0, !empty, err
	}
	v := meta.Get(MetaSchemaVersion)
	if v == nil {
		return 0, true, nil
	}
	version, err = strconv.ParseUint(string(v), 10, 64)
	if err != nil {
		return 0, true, fmt.Errorf("%w: schema version %q: %v", ErrCorruptFile, v, err)
	}
	return version, true, nil
}

// Path returns the file's path.
func (db *DB) Path() string { return db.path }

// ReadOnly reports whether the DB refuses writes.
func (db *DB) ReadOnly() bool { return db.opts.ReadOnly }

// Now is the DB's clock (Options.Now).
func (db *DB) Now() time.Time { return db.opts.Now() }

// Stats returns bbolt's statistics (free and pending pages for metrics).
func (db *DB) Stats() bolt.Stats { return db.bolt.Stats() }

// Close stops the commit loop after the queued writes and closes the file.
// A clean Close is a sync point: an unsynced file is made durable first.
func (db *DB) Close() error {
	var err error
	db.closeOnce.Do(func() {
		close(db.closed)
		close(db.stop)
		<-db.done
		err = errors.Join(db.makeDurable(), db.bolt.Close())
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

// Page layout of a new file, fitted to the records: a Pod's compressed
// record is 1.5–4 KB, and bbolt gives each node at least two elements, so
// with 4 KB pages most leaves took two pages for two records. With 8 KB
// pages filled to 90% (bbolt's default is 50%, meant for random inserts
// into small values) a leaf holds three or four, and a file of Pods is
// much smaller (make bench, scenario 7: the file's size per object against
// the protobuf wire size).
// An existing file keeps the page size it was created with.
const (
	// PageSize is the bbolt page size of a new file.
	PageSize = 8192
	// ObjectsFillPercent is how full bbolt fills a leaf of an objects
	// bucket before it splits it (set on every transaction's handle).
	ObjectsFillPercent = 0.9
	// AllocSize is how much bbolt grows the file at a time once it is past
	// that size (bbolt's default, 16 MiB, is a large part of a small file).
	AllocSize = 4 << 20
)
