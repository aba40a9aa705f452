package cachefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

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
	// records, when set, checks every record during the page walk.
	records *recordCheck
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
		var records *recordCheck
		if mode == ValidatePages {
			records = opts.records
		}
		if _, err := validateFile(f, path, mode, records); err != nil {
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
	// AppendFillPercent is how full bbolt fills the leaves of an objects
	// bucket written in key order after every key it holds (a cold list:
	// boltstore sets it on that transaction's handle). No insert lands
	// between such leaves; the headroom left is for records that grow
	// when they are updated, without a split.
	AppendFillPercent = 0.95
	// IndexFillPercent is the same for an index bucket (set by
	// Buckets.Index and CreateIndex). A list applies its page in key order,
	// so its index entries of one value arrive in order too, and bbolt's
	// default of half-full leaves doubled the indexes' pages.
	IndexFillPercent = 0.9
	// AllocSize is how much bbolt grows the file at a time once it is past
	// that size (bbolt's default, 16 MiB, is a large part of a small file).
	AllocSize = 4 << 20
)
