package boltinformer

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/boltinformer/boltinformer/encryption"
	"github.com/boltinformer/boltinformer/internal/admin"
	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/failpoint"
	"github.com/boltinformer/boltinformer/migrations"
)

// Cache is one cache file and the informers that keep its stores current.
type Cache struct {
	db     *cachefile.DB
	opts   Options
	logger klog.Logger
	// loggerSet: Options.Logger was given; informers then ignore the
	// logger of their Run context.
	loggerSet bool
	metrics   *metrics
	admin     *admin.Server
	// keys opens sealed payloads and seals new ones (nil: no encryption).
	keys *encryption.Keyring
	// movedTo is where Open moved a damaged file (RebuildOnCorruption).
	movedTo string
	// relistPages bounds the relist pages the informers hold together
	// (Options.RelistPages).
	relistPages *relistBudget

	// mu guards informers, closed and identity.
	mu        sync.Mutex
	informers map[string]*Informer
	closed    bool
	// identity asks Options.ClusterIdentity for every informer (nil: none
	// asked yet, or no ClusterIdentity).
	identity *clusterIdentity
}

// Open opens (or creates) the cache file at path. A file of an older schema
// version is migrated in place first (unless RefuseOlderSchema). Open fails
// with a clear error when the file is not a cache file, is locked by
// another process beyond LockTimeout, or cannot be opened by this build
// and the options say to fail rather than start a new file.
func Open(path string, opts Options) (*Cache, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	logger, loggerSet := klog.Background(), opts.Logger.GetSink() != nil
	if loggerSet {
		logger = opts.Logger
	}
	keys, err := opts.Encryption.keyring()
	if err != nil {
		return nil, err
	}
	if err := prepareFileMode(path, opts.TightenFileMode, logger); err != nil {
		return nil, err
	}
	db, opened, err := openFile(path, opts, logger)
	if err != nil {
		return nil, err
	}
	if opts.DropStoresUnusedFor > 0 {
		if err := dropUnusedStores(db, opts.DropStoresUnusedFor, logger); err != nil {
			_ = db.Close()
			return nil, err
		}
	}
	c := &Cache{db: db, opts: opts, keys: keys, informers: map[string]*Informer{}, logger: logger, loggerSet: loggerSet, movedTo: opened.movedTo}
	pages := opts.RelistPages
	if pages <= 0 {
		pages = defaultRelistPages()
	}
	c.relistPages = newRelistBudget(pages)
	c.metrics = newMetrics(c)
	c.metrics.observeOpen(opened)
	if opts.Registerer != nil {
		if err := c.metrics.register(opts.Registerer); err != nil {
			_ = db.Close()
			return nil, fmt.Errorf("register metrics: %w", err)
		}
	}
	if opts.AdminSocket != "" {
		srv, err := serveAdmin(opts.AdminSocket, db)
		if err != nil {
			c.metrics.unregister()
			_ = db.Close()
			return nil, err
		}
		c.admin = srv
	}
	return c, nil
}

// serveAdmin serves db on the admin socket at path. A missing directory is
// created as the cache file's is (mode 0700); the admin package's errors
// already say they are about the admin socket.
func serveAdmin(path string, db *cachefile.DB) (*admin.Server, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("%w: create its directory: %w", admin.ErrSocketPath, err)
	}
	return admin.NewServer(path, db)
}

// fileOpening is what openFile did to the file besides opening it.
type fileOpening struct {
	// upgrade is the migration to this build's schema, when one ran, and
	// upgradeErr its error.
	upgrade    *migrations.Report
	upgradeErr error
	// movedTo is where a file was moved aside before a new one was
	// started (""), and rebuild why the file was started again (one of
	// the rebuild constants, "" if it was not).
	movedTo, rebuild string
}

// Reasons a file is started again (the reason label of file_rebuilds_total).
const (
	rebuildCorrupt     = "corrupt"
	rebuildNewerSchema = "newer_schema"
	rebuildNotDurable  = "not_durable"
)

// openFile opens the cache file for writing. A file of an older schema is
// migrated in place and opened, and one of a newer schema this build
// cannot write is moved aside and started again, unless the options refuse
// them; a damaged one is moved aside and started again when they say so.
func openFile(path string, opts Options, logger klog.Logger) (*cachefile.DB, fileOpening, error) {
	var o fileOpening
	// A new file is built without fsync until every informer that began
	// filling it has synced, started its relist over or stopped (the last
	// one makes it durable before its HasSynced is true); a crash before
	// that leaves a marker, and the next Open rebuilds it.
	dbOpts := cachefile.Options{LockTimeout: opts.LockTimeout, NoSync: opts.NoSync, Now: opts.Now, Unsynced: true, Logger: logger}
	db, err := cachefile.Open(path, dbOpts)
	if errors.Is(err, cachefile.ErrNeedsMigration) {
		if opts.RefuseOlderSchema {
			return nil, o, fmt.Errorf("%w (Options.RefuseOlderSchema is set: migrate it with cachectl migrate --db %s)", err, path)
		}
		rep, merr := upgrade(path, opts, logger)
		o.upgrade, o.upgradeErr = &rep, merr
		switch {
		case merr == nil:
			db, err = cachefile.Open(path, dbOpts)
		case damaged(merr):
			err = fmt.Errorf("open %s: %w: migrating it from schema v%d failed: %w", path, cachefile.ErrCorruptFile, rep.From, merr)
		default:
			return nil, o, fmt.Errorf("open %s: %w", path, merr)
		}
	}
	var newer *cachefile.SchemaError
	if errors.As(err, &newer) && !opts.RefuseNewerSchema {
		movedTo, serr := setAside(path, fmt.Sprintf("newer-v%d", newer.Compat.Version), "newer-v", opts.Now())
		if serr != nil {
			return nil, o, fmt.Errorf("%w; moving it aside failed: %w", err, serr)
		}
		logger.Error(err, "Cache file was written by a newer build with changes this build cannot write; moved it aside and starting a new one (every informer relists)",
			"path", path, "movedTo", movedTo, "fileSchema", newer.Compat.String(), "buildSchema", fmt.Sprintf("v%d", cachefile.Version))
		o.movedTo, o.rebuild = movedTo, rebuildNewerSchema
		db, err = cachefile.Open(path, dbOpts)
	}
	if errors.Is(err, cachefile.ErrCorruptFile) && opts.OnCorruption == RebuildOnCorruption {
		movedTo, rerr := setAside(path, "corrupt", "", opts.Now())
		if rerr != nil {
			return nil, o, fmt.Errorf("%w; moving it aside failed: %w", err, rerr)
		}
		logger.Error(err, "Cache file is damaged; moved it aside and starting a new one (every informer relists)", "path", path, "movedTo", movedTo)
		o.movedTo, o.rebuild = movedTo, rebuildCorrupt
		db, err = cachefile.Open(path, dbOpts)
	}
	if err != nil {
		return nil, o, err
	}
	if db.DiscardedUnsynced() && o.rebuild == "" {
		o.rebuild = rebuildNotDurable
	}
	return db, o, nil
}

// setAside renames the file path names (following a symbolic link, which
// then names the new file Open creates) to NAME.KIND-TIMESTAMP beside it.
// With a family, it removes the other files set aside as NAME.FAMILY*, so
// that a fleet rolled back and forth leaves one copy, not one per start.
func setAside(path, kind, family string, now time.Time) (string, error) {
	real, err := cachefile.Resolve(path)
	if err != nil {
		return "", err
	}
	movedTo := fmt.Sprintf("%s.%s-%s", real, kind, now.UTC().Format("20060102T150405.000000000Z"))
	if err := os.Rename(real, movedTo); err != nil {
		return "", err
	}
	if family == "" {
		return movedTo, nil
	}
	dir, prefix := filepath.Dir(real), filepath.Base(real)+"."+family
	entries, err := os.ReadDir(dir)
	if err != nil {
		return movedTo, err
	}
	for _, e := range entries {
		if name := e.Name(); strings.HasPrefix(name, prefix) && filepath.Join(dir, name) != movedTo && e.Type().IsRegular() {
			if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return movedTo, err
			}
		}
	}
	return movedTo, nil
}

// upgrade migrates the file at path to this build's schema in place, and
// logs what it did.
func upgrade(path string, opts Options, logger klog.Logger) (migrations.Report, error) {
	logger.Info("Cache file has an older schema; migrating it in place before the informers start",
		"path", path, "to", fmt.Sprintf("v%d", cachefile.Version))
	rep, err := migrations.Migrate(path, migrations.Options{LockTimeout: opts.LockTimeout, NoSync: opts.NoSync, Now: opts.Now, Logger: logger})
	if err != nil {
		logger.Error(err, "Migrating the cache file failed", "path", path, "from", fmt.Sprintf("v%d", rep.From),
			"reached", fmt.Sprintf("v%d", rep.To), "duration", rep.Duration.Round(time.Millisecond))
		return rep, err
	}
	logger.Info("Migrated the cache file", "path", path, "from", fmt.Sprintf("v%d", rep.From), "to", fmt.Sprintf("v%d", rep.To),
		"stores", rep.Stores, "records", rep.Records, "duration", rep.Duration.Round(time.Millisecond))
	failpoint.Inject("boltinformer.afterUpgrade") // migrated and synced, not yet opened
	return rep, nil
}

// dropUnusedStores drops the stores of db no program has used for
// unusedFor (Options.DropStoresUnusedFor), and logs each.
func dropUnusedStores(db *cachefile.DB, unusedFor time.Duration, logger klog.Logger) error {
	rep, err := db.PruneStores(cachefile.PruneOptions{UnusedFor: unusedFor})
	if err != nil {
		return err
	}
	for _, u := range rep.Dropped {
		logger.Info("Dropped a store no program has used for longer than DropStoresUnusedFor", "path", db.Path(), "store", u.Name,
			"objects", u.Objects, "lastUsed", u.LastUsed, "unusedFor", unusedFor)
	}
	return nil
}

// damaged reports whether a migration failed on what the file holds (its
// layout, a record, the check of its result), as opposed to the lock, the
// disk or a stop.
func damaged(err error) bool {
	for _, target := range []error{migrations.ErrLayout, migrations.ErrCheckFailed, cachefile.ErrCorruptFile, cachefile.ErrCorruptRecord} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// MovedAside returns the path Open moved the file to before it started a
// new one (a damaged file with RebuildOnCorruption, or one of a newer
// schema this build cannot write), or "".
func (c *Cache) MovedAside() string { return c.movedTo }

// informerList returns a copy of the cache's informers, in no order.
func (c *Cache) informerList() []*Informer {
	c.mu.Lock()
	defer c.mu.Unlock()
	infs := make([]*Informer, 0, len(c.informers))
	for _, inf := range c.informers {
		infs = append(infs, inf)
	}
	return infs
}

// Close closes the file. Stop every informer (cancel its Run context and
// wait for Run to return) first; Close refuses while one still runs.
func (c *Cache) Close() error {
	c.mu.Lock()
	for name, inf := range c.informers {
		if inf.isRunning() {
			c.mu.Unlock()
			return fmt.Errorf("close cache: informer %s is still running", name)
		}
	}
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	var errs []error
	if c.admin != nil {
		errs = append(errs, c.admin.Close())
	}
	c.metrics.unregister()
	errs = append(errs, c.db.Close())
	return errors.Join(errs...)
}
