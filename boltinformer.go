package boltinformer

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
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
	// Registerer, when set, receives the cache's Prometheus metrics.
	Registerer prometheus.Registerer
	// Logger receives every log line of the cache and its informers (their
	// reflectors, queues and handler fan-out), so that a program logging
	// through zap (zapr), controller-runtime or any other logr sink gets one
	// format. A zero Logger (no sink) means klog.Background(), and then an
	// informer's RunWithContext logs to the logger of its context if it has
	// one, as client-go's informers do.
	Logger logr.Logger
	// AdminSocket, when set, is the path of a unix socket (mode 0600) on
	// which the cache serves read-only queries and consistent snapshots of
	// its stores, for `cachectl --socket` (the file itself is locked while
	// this process holds it).
	AdminSocket string
}

// Cache is one cache file and the informers that keep its stores current.
type Cache struct {
	db     *boltindexer.DB
	opts   Options
	logger klog.Logger
	// loggerSet: Options.Logger was given; informers then ignore the
	// logger of their Run context.
	loggerSet bool
	metrics   *metrics
	admin     *admin.Server

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
	if opts.Logger.GetSink() != nil {
		c.logger, c.loggerSet = opts.Logger, true
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
