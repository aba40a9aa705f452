package boltinformer

import (
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
)

// Options configure a Cache.
type Options struct {
	// LockTimeout bounds the wait when another process holds the file
	// (default cachefile.DefaultLockTimeout).
	LockTimeout time.Duration
	// RelistPages bounds the relist pages that the cache's informers hold
	// at once, together: each page from its request to the end of its
	// commit and notifications. Informers relisting at the same time (a
	// cold start) take pages in turn, so their heap stays that of a few
	// pages however many informers the file has (InformerOptions.PageSize
	// and PageBytes bound a page). Default: twice GOMAXPROCS, at least 4.
	RelistPages int
	// NoSync turns fsync off. Only for tests and benchmarks: a crash can then
	// lose committed data.
	NoSync bool
	// Registerer, when set, receives the cache's Prometheus metrics (see
	// the README for the list). Each carries the const label file, the
	// cache file's absolute path, so several Caches may share one
	// Registerer; Close unregisters them.
	Registerer prometheus.Registerer
	// Logger receives every log line of the cache and its informers (their
	// reflectors, queues and handler fan-out), so that a program logging
	// through zap (zapr), controller-runtime or any other logr sink gets one
	// format. A zero Logger (no sink) means klog.Background(), and then an
	// informer's RunWithContext logs what it runs (reflector, queue,
	// process loop) to the logger of its context if it has one, and a
	// handler's lines (its panics, its backlog) go to its
	// HandlerOptions.Logger, as client-go's informers do.
	Logger logr.Logger
	// OnCorruption says what to do with a damaged cache file, and what an
	// informer does when a stored record fails its checksum at a warm
	// start (see CorruptionPolicy); the default fails.
	OnCorruption CorruptionPolicy
	// Now is the clock for file names and timestamps; time.Now if nil.
	Now func() time.Time
	// ClusterIdentity, when set, identifies the cluster the informers'
	// ListerWatchers talk to; KubeSystemUID(clientset.CoreV1()) is the usual
	// one. The cache calls it once, when its first informer starts, and
	// every informer records the answer with its store before it replays or
	// resumes anything: a store that belonged to another cluster (the file
	// was copied, the cluster was recreated) is emptied and relisted, never
	// resumed. While it fails it is retried with a backoff, each failure
	// counted in list_watch_errors_total, and the informers wait and do not
	// sync.
	//
	// Without it, a file that meets another cluster is caught only when its
	// stored resourceVersion is ahead of that cluster's current one (every
	// resumed WATCH is checked first with one LIST limit=1); another cluster
	// whose resourceVersion has passed the stored one is then resumed from,
	// and the objects that differ between the two clusters stay stale.
	ClusterIdentity ClusterIdentityFunc
	// AdminSocket, when set, is the path of a unix socket (mode 0600) on
	// which the cache serves read-only queries and consistent snapshots of
	// its stores, for `cachectl --socket` (the file itself is locked while
	// this process holds it). A missing directory is created (mode 0700),
	// as the cache file's is.
	AdminSocket string
	// Encryption, when set, seals record payloads at rest (Secrets by
	// default, every store with AllResources); see EncryptionOptions.
	Encryption *EncryptionOptions
	// TightenFileMode sets an existing cache file that group or others can
	// read or write to mode 0600 on Open; without it Open logs a warning.
	TightenFileMode bool
	// RefuseOlderSchema makes Open fail with an error wrapping
	// cachefile.ErrNeedsMigration on a file of an older schema version,
	// for operators who migrate by hand (cachectl migrate). By default
	// Open migrates such a file in place before any informer starts, one
	// crash-safe step at a time (package migrations), and the informers
	// then resume from the stored resourceVersions.
	RefuseOlderSchema bool
	// RefuseNewerSchema makes Open fail with an error wrapping
	// cachefile.ErrNewerSchema on a file that a newer build wrote with
	// changes this build cannot write (its minimum writer version is
	// newer than cachefile.Version). By default Open moves such a file
	// aside as PATH.newer-vN-TIMESTAMP, keeping only the last one, logs it
	// at error level, counts it in file_rebuilds_total{reason="newer_schema"}
	// and starts a new file that every informer relists: a rollback costs
	// a relist, never a crash loop. A newer file this build can write (it
	// only added what this build may ignore) is opened as it is.
	RefuseNewerSchema bool
	// DropStoresUnusedFor, when positive, makes Open drop the stores of
	// the file that no program has used for that long: a new version of a
	// program that changes a store's name, namespace or selectors leaves
	// the old store behind, and it would stay in the file for good. A
	// store is in use while it is written (every commit, bookmarks
	// included) and whenever an informer opens it. Open runs before this
	// process makes any informer, so it never drops a store an informer
	// of this process uses; a store whose informer went longer than this
	// without a single commit is dropped at the next start and relisted
	// once. cachectl prune drops stores by hand.
	DropStoresUnusedFor time.Duration
}

// CorruptionPolicy says what Open does with a damaged cache file (a
// truncated file, a bad meta or page, bbolt structure that does not hold),
// and what an informer does when, before it resumes from the stored RV, a
// stored record fails its CRC-32C.
type CorruptionPolicy uint8

const (
	// FailOnCorruption makes Open fail with an error wrapping
	// cachefile.ErrCorruptFile that names the file and the damage, and an
	// informer whose store holds a damaged record not start (it logs the
	// store and key, and IsStopped reports true). Nothing is written to
	// the file: an operator can inspect it (cachectl check).
	FailOnCorruption CorruptionPolicy = iota
	// RebuildOnCorruption moves the damaged file aside as
	// NAME.corrupt-TIMESTAMP (kept for inspection), logs it, and starts a
	// new file: every informer then cold-starts with a relist. A store with
	// a damaged record is emptied and relists. A file that is not a cache
	// file at all, or is locked, is never moved.
	RebuildOnCorruption
)
