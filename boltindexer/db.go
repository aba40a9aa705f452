package boltindexer

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/boltinformer/boltinformer/internal/schema"
)

// WriterVersion is recorded in the meta bucket by every process that opens
// a file for writing.
var WriterVersion = "boltinformer/v1"

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
}

// DB is one cache file. It holds many stores and owns the commit loop that
// merges every store's writes into shared bbolt transactions.
type DB struct {
	bolt *bolt.DB
	path string
	opts Options

	// requests feeds the commit loop; stop and done end it (Close).
	requests chan *writeRequest
	stop     chan struct{}
	done     chan struct{}

	// closeOnce guards Close; closed is closed when Close starts.
	closeOnce sync.Once
	closed    chan struct{}
}

// OpenDB opens or creates the cache file at path (mode 0600). A file that
// is not bbolt, is locked by another process beyond LockTimeout, or has a
// different schema version is refused with an error from errors.go; nothing
// is written to it in those cases.
func OpenDB(path string, opts Options) (*DB, error) {
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = DefaultLockTimeout
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 64
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.ReadOnly {
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("open cache file %s: %w", path, err)
		}
	}
	b, err := bolt.Open(path, 0o600, &bolt.Options{
		Timeout:         opts.LockTimeout,
		ReadOnly:        opts.ReadOnly,
		NoSync:          opts.NoSync,
		NoFreelistSync:  true,
		FreelistType:    bolt.FreelistMapType,
		InitialMmapSize: opts.InitialMmapSize,
	})
	if err != nil {
		return nil, classifyOpenError(path, opts.LockTimeout, err)
	}
	db := &DB{
		bolt:     b,
		path:     path,
		opts:     opts,
		requests: make(chan *writeRequest),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
		closed:   make(chan struct{}),
	}
	if err := db.checkSchema(); err != nil {
		_ = b.Close()
		return nil, err
	}
	go db.commitLoop()
	return db, nil
}

func classifyOpenError(path string, timeout time.Duration, err error) error {
	switch {
	case errors.Is(err, bolterrors.ErrTimeout):
		return fmt.Errorf("open %s: %w (waited %s; if a process is serving it, read it through its admin socket): %v", path, ErrLocked, timeout, err)
	case errors.Is(err, bolterrors.ErrInvalid), errors.Is(err, bolterrors.ErrVersionMismatch), errors.Is(err, bolterrors.ErrChecksum):
		return fmt.Errorf("open %s: %w: %v", path, ErrNotBolt, err)
	}
	// bbolt reports a too-small or truncated file with a plain error.
	if fi, statErr := os.Stat(path); statErr == nil && fi.Mode().IsRegular() && fi.Size() > 0 && fi.Size() < 4096*2 {
		return fmt.Errorf("open %s: %w (file is %d bytes): %v", path, ErrNotBolt, fi.Size(), err)
	}
	return fmt.Errorf("open %s: %w", path, err)
}

// checkSchema initialises an empty file at schema.Version and refuses any
// other version. It never modifies a file that holds data.
func (db *DB) checkSchema() error {
	version, initialised, err := ReadSchemaVersion(db.bolt)
	if err != nil {
		return fmt.Errorf("open %s: %w", db.path, err)
	}
	switch {
	case !initialised && db.opts.ReadOnly:
		return fmt.Errorf("open %s: %w: file has no boltinformer meta data", db.path, ErrCorruptFile)
	case !initialised:
		return db.bolt.Update(func(tx *bolt.Tx) error {
			meta, err := tx.CreateBucket(schema.MetaBucket)
			if err != nil {
				return fmt.Errorf("initialise %s: %w", db.path, err)
			}
			if _, err := tx.CreateBucket(schema.StoresBucket); err != nil {
				return fmt.Errorf("initialise %s: %w", db.path, err)
			}
			now := db.opts.Now().UTC().Format(time.RFC3339)
			return putAll(meta,
				schema.MetaSchemaVersion, []byte(strconv.FormatUint(schema.Version, 10)),
				schema.MetaCreatedAt, []byte(now),
				schema.MetaWriterVersion, []byte(WriterVersion))
		})
	case version > schema.Version:
		return fmt.Errorf("open %s: %w: file is schema v%d, this build supports up to v%d", db.path, ErrNewerSchema, version, schema.Version)
	case version < schema.Version:
		return fmt.Errorf("open %s: %w: file is schema v%d, this build needs v%d", db.path, ErrNeedsMigration, version, schema.Version)
	}
	if db.opts.ReadOnly {
		return nil
	}
	return db.bolt.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(schema.MetaBucket).Put(schema.MetaWriterVersion, []byte(WriterVersion))
	})
}

// ReadSchemaVersion reports the schema version of an open bbolt file.
// initialised is false for a file with no buckets at all. A file with
// buckets but no meta bucket is schema v0 (the layout before meta existed).
func ReadSchemaVersion(b *bolt.DB) (version uint64, initialised bool, err error) {
	err = b.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket(schema.MetaBucket)
		if meta == nil {
			empty := true
			_ = tx.ForEach(func([]byte, *bolt.Bucket) error { empty = false; return nil })
			initialised = !empty
			return nil
		}
		initialised = true
		v := meta.Get(schema.MetaSchemaVersion)
		if v == nil {
			return nil
		}
		version, err = strconv.ParseUint(string(v), 10, 64)
		if err != nil {
			return fmt.Errorf("%w: schema version %q: %v", ErrCorruptFile, v, err)
		}
		return nil
	})
	return version, initialised, err
}

func putAll(b *bolt.Bucket, kv ...[]byte) error {
	for i := 0; i+1 < len(kv); i += 2 {
		if err := b.Put(kv[i], kv[i+1]); err != nil {
			return err
		}
	}
	return nil
}

// Path returns the file's path.
func (db *DB) Path() string { return db.path }

// Bolt returns the underlying bbolt handle, for read-only tools (snapshot,
// check, cachectl). Writing through it bypasses the commit loop.
func (db *DB) Bolt() *bolt.DB { return db.bolt }

// ReadOnly reports whether the DB refuses writes.
func (db *DB) ReadOnly() bool { return db.opts.ReadOnly }

// Close stops the commit loop after the queued writes and closes the file.
func (db *DB) Close() error {
	var err error
	db.closeOnce.Do(func() {
		close(db.closed)
		close(db.stop)
		<-db.done
		err = db.bolt.Close()
	})
	return err
}

// View runs fn in a bbolt read transaction.
func (db *DB) View(fn func(tx *bolt.Tx) error) error {
	select {
	case <-db.closed:
		return ErrClosed
	default:
	}
	return db.bolt.View(fn)
}

// writeRequest is one caller's part of a merged write transaction.
type writeRequest struct {
	// fn applies the change; it must not keep tx or its memory.
	fn func(tx *bolt.Tx) error
	// beforeCommit and afterCommit run in the commit loop around the
	// commit (for the hot-object cache); either may be nil.
	beforeCommit func()
	afterCommit  func(committed bool)
	result       chan error
}

// update submits fn to the commit loop and waits for its commit.
func (db *DB) update(req *writeRequest) error {
	if db.opts.ReadOnly {
		return ErrReadOnly
	}
	req.result = make(chan error, 1)
	select {
	case db.requests <- req:
	case <-db.closed:
		return ErrClosed
	}
	return <-req.result
}

// commitLoop merges queued write requests into one transaction. If the
// merged transaction fails, each request is retried alone so that one bad
// batch never fails the others.
func (db *DB) commitLoop() {
	defer close(db.done)
	batch := make([]*writeRequest, 0, db.opts.MaxBatch)
	for {
		batch = batch[:0]
		select {
		case req := <-db.requests:
			batch = append(batch, req)
		case <-db.stop:
			return
		}
	gather:
		for len(batch) < db.opts.MaxBatch {
			select {
			case req := <-db.requests:
				batch = append(batch, req)
			default:
				break gather
			}
		}
		if err := db.commit(batch); err != nil && len(batch) > 1 {
			for _, req := range batch {
				req.result <- db.commit([]*writeRequest{req})
			}
			continue
		} else {
			for _, req := range batch {
				req.result <- err
			}
		}
	}
}

func (db *DB) commit(batch []*writeRequest) (err error) {
	for _, req := range batch {
		if req.beforeCommit != nil {
			req.beforeCommit()
		}
	}
	defer func() {
		for _, req := range batch {
			if req.afterCommit != nil {
				req.afterCommit(err == nil)
			}
		}
	}()
	return db.bolt.Update(func(tx *bolt.Tx) error {
		for _, req := range batch {
			if err := runWrite(req.fn, tx); err != nil {
				return err
			}
		}
		return nil
	})
}

// runWrite turns a panic in fn into an error so the commit loop survives it.
func runWrite(fn func(tx *bolt.Tx) error, tx *bolt.Tx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("write panicked: %v", r)
		}
	}()
	return fn(tx)
}
