package boltinformer

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"

	"github.com/boltinformer/boltinformer/boltindexer"
	"github.com/boltinformer/boltinformer/internal/admin"
)

// Options configure a Cache.
type Options struct {
	// LockTimeout bounds the wait when another process holds the file
	// (default boltindexer.DefaultLockTimeout).
	LockTimeout time.Duration
	// NoSync turns fsync off. Only for tests and benchmarks: a crash can then
	// lose committed data.
	NoSync bool
	// Registerer, when set, receives the cache's Prometheus metrics (see
	// the README for the list). Each carries the const label file, the
	// cache file's absolute path, so several Caches may share one
	// Registerer; Close unregisters them.
	Registerer prometheus.Registerer
	// Logger is the cache's logger; klog.Background() if nil.
	Logger *klog.Logger
	// AdminSocket, when set, is the path of a unix socket (mode 0600) on
	// which the cache serves read-only queries and consistent snapshots of
	// its stores, for `cachectl --socket` (the file itself is locked while
	// this process holds it).
	AdminSocket string
}

// Cache is one cache file and the informers that keep its stores current.
type Cache struct {
	db      *boltindexer.DB
	opts    Options
	logger  klog.Logger
	metrics *metrics
	admin   *admin.Server

	// mu guards informers and closed.
	mu        sync.Mutex
	informers map[string]*Informer
	closed    bool
}

// Open opens (or creates) the cache file at path. It fails with a clear
// error when the file is not a cache file, is locked by another process
// beyond LockTimeout, or has a schema version this build cannot open.
func Open(path string, opts Options) (*Cache, error) {
	db, err := boltindexer.OpenDB(path, boltindexer.Options{LockTimeout: opts.LockTimeout, NoSync: opts.NoSync})
	if err != nil {
		return nil, err
	}
	c := &Cache{db: db, opts: opts, informers: map[string]*Informer{}, logger: klog.Background()}
	if opts.Logger != nil {
		c.logger = *opts.Logger
	}
	c.metrics = newMetrics(c)
	if opts.Registerer != nil {
		if err := c.metrics.register(opts.Registerer); err != nil {
			_ = db.Close()
			return nil, fmt.Errorf("register metrics: %w", err)
		}
	}
	if opts.AdminSocket != "" {
		srv, err := admin.NewServer(opts.AdminSocket, db)
		if err != nil {
			c.metrics.unregister()
			_ = db.Close()
			return nil, fmt.Errorf("admin socket: %w", err)
		}
		c.admin = srv
	}
	return c, nil
}

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

// DB returns the cache file.
func (c *Cache) DB() *boltindexer.DB { return c.db }

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
