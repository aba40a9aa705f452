package migrations

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"
	bolt "go.etcd.io/bbolt"

	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/failpoint"
	v0 "github.com/boltinformer/boltinformer/migrations/internal/v0"
)

// DefaultTxMaxSize bounds the bytes of keys and values a rewrite commits per
// transaction when Options.TxMaxSize is zero.
const DefaultTxMaxSize = 32 << 20

// Options configure Plan and Migrate.
type Options struct {
	// Target is the schema version to end at; nil means cachefile.Version. A
	// version below the file's runs the reverts of the steps in between.
	Target *uint64
	// LockTimeout bounds the wait for another process's lock on the file;
	// zero means cachefile.DefaultLockTimeout. It is never infinite.
	LockTimeout time.Duration
	// NoSync skips fsync (tests only: a power loss could then lose the
	// migrated file).
	NoSync bool
	// Now is the time written as created-at and updated-at; nil means time.Now.
	Now func() time.Time
	// TxMaxSize bounds the bytes per transaction of a rewrite; zero means
	// DefaultTxMaxSize.
	TxMaxSize int
	// Logger, when it has a sink, receives one line per finished step
	// (versions, duration), so that a long migration shows its progress.
	Logger logr.Logger

	// ctx is MigrateContext's; nil means context.Background().
	ctx context.Context
	// writer is recorded as the meta writer-version by upgrades; empty
	// means cachefile.WriterVersion (tests set another).
	writer string
}

func (o Options) complete() Options {
	if o.LockTimeout <= 0 {
		o.LockTimeout = cachefile.DefaultLockTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.writer == "" {
		o.writer = cachefile.WriterVersion
	}
	if o.TxMaxSize <= 0 {
		o.TxMaxSize = DefaultTxMaxSize
	}
	if o.ctx == nil {
		o.ctx = context.Background()
	}
	return o
}

func (o Options) target(current uint64) uint64 {
	if o.Target == nil {
		return current
	}
	return *o.Target
}

// Report says what Plan would do or what Migrate did.
type Report struct {
	Path string
	// Empty is true for a file with no buckets at all (a store
	// initialises it on open); there is then nothing to migrate.
	Empty bool
	// From is the file's schema version before; To is the version after
	// the steps (for Plan, the version they would reach).
	From, To uint64
	// Steps are the steps that would run (Plan) or ran (Migrate), in order.
	Steps []StepInfo
	// Duration is the time Migrate spent.
	Duration time.Duration
	// Stores and Records are what the file holds after Migrate ran steps
	// to a version that counts records (v2 on); zero otherwise.
	Stores, Records int
}

func (r Report) String() string {
	var b strings.Builder
	switch {
	case r.Empty:
		fmt.Fprintf(&b, "%s: empty file, nothing to migrate", r.Path)
	case len(r.Steps) == 0:
		fmt.Fprintf(&b, "%s: schema v%d, nothing to migrate", r.Path, r.From)
	default:
		fmt.Fprintf(&b, "%s: schema v%d → v%d in %d step(s)", r.Path, r.From, r.To, len(r.Steps))
	}
	for _, s := range r.Steps {
		fmt.Fprintf(&b, "\n  %s", s)
	}
	return b.String()
}

// Plan reports the steps Migrate would run on the file at path, without
// writing to it (a dry run). When there are steps, it also checks that the
// file follows the layout of its version (one read of the whole file) and
// fails with ErrLayout if not. It takes a shared lock, so it fails with
// cachefile.ErrLocked while a process holds the file for writing.
func Plan(path string, opts Options) (Report, error) {
	return plan(path, opts.complete(), registry, cachefile.Version)
}

func plan(path string, opts Options, steps []step, current uint64) (Report, error) {
	rep := Report{Path: path}
	if empty, err := zeroLength(path); err != nil || empty {
		rep.Empty = empty
		return rep, err
	}
	db, err := openLocked(path, opts.LockTimeout, true, true)
	if err != nil {
		return rep, err
	}
	defer db.Close()
	ps, err := planFile(db, &rep, steps, current, opts.target(current), "plan", path)
	if err != nil || rep.Empty {
		return rep, err
	}
	for _, p := range ps {
		rep.Steps = append(rep.Steps, p.StepInfo)
		rep.To = p.To
	}
	if len(ps) > 0 {
		// A dry run also says whether the steps can read the file.
		err := db.View(func(tx *bolt.Tx) error { return checkFile(tx, rep.From) })
		if err != nil && !errors.Is(err, ErrLayout) {
			err = fmt.Errorf("%w: %w", ErrLayout, err)
		}
		if err != nil {
			return rep, fmt.Errorf("plan %s: schema v%d: %w", path, rep.From, err)
		}
	}
	return rep, nil
}

// planFile reads db's schema version into rep (From and To; Empty, with no
// steps, for a file never initialised) and plans the steps from it to
// target. op and path name the run in errors.
func planFile(db *bolt.DB, rep *Report, steps []step, current, target uint64, op, path string) ([]plannedStep, error) {
	from, initialised, err := schemaVersion(db)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", op, path, err)
	}
	if !initialised {
		rep.Empty = true
		return nil, nil
	}
	rep.From, rep.To = from, from
	ps, err := planSteps(steps, current, from, target)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", op, path, err)
	}
	return ps, nil
}

// Migrate brings the file at path to opts.Target (cachefile.Version by
// default), one step at a time. It holds bbolt's exclusive lock, so it
// fails with cachefile.ErrLocked while any process has the file open. A file of a
// newer schema than this build knows is refused with cachefile.ErrNewerSchema before
// anything is written. After a crash the file is at the version of the
// last completed step, complete; running Migrate again continues from there.
func Migrate(path string, opts Options) (Report, error) {
	return migrate(path, opts.complete(), registry, cachefile.Version)
}

// MigrateContext is Migrate that stops when ctx ends (SIGINT): before a
// step, or within a rewrite between two of its transactions, whose partial
// copy it removes. The file is then at the version of the last completed
// step, complete, and the error is ctx's.
func MigrateContext(ctx context.Context, path string, opts Options) (Report, error) {
	opts.ctx = ctx
	return migrate(path, opts.complete(), registry, cachefile.Version)
}

func migrate(path string, opts Options, steps []step, current uint64) (rep Report, err error) {
	start := time.Now()
	rep = Report{Path: path}
	defer func() { rep.Duration = time.Since(start) }()
	if path, err = cachefile.Resolve(path); err != nil {
		return rep, err
	}
	if empty, err := zeroLength(path); err != nil || empty {
		rep.Empty = empty
		return rep, err
	}
	db, err := cachefile.OpenBolt(path, cachefile.BoltOptions{LockTimeout: opts.LockTimeout, NoSync: opts.NoSync, MustExist: true})
	if err != nil {
		return rep, err
	}
	defer func() {
		if db != nil {
			_ = db.Close()
		}
	}()
	ps, err := planFile(db, &rep, steps, current, opts.target(current), "migrate", path)
	if err != nil || rep.Empty {
		return rep, err
	}
	// Leftovers of a crashed run; the lock says no run is in progress.
	for _, f := range []string{path + tmpSuffix, path + scratchSuffix} {
		if err := removeIfExists(f); err != nil {
			return rep, err
		}
	}
	for _, p := range ps {
		if err := opts.ctx.Err(); err != nil {
			return rep, fmt.Errorf("migrate %s: stopped before v%d to v%d: %w", path, p.From, p.To, err)
		}
		stepStart := time.Now()
		e := &env{path: path, scratchPath: path + scratchSuffix, now: opts.Now(), writer: opts.writer, txMaxSize: opts.TxMaxSize}
		if fi, err := os.Stat(path); err == nil {
			e.size = fi.Size()
		}
		if p.inPlace != nil {
			err = runInPlace(db, p, e)
		} else {
			err = runRewrite(opts.ctx, db, p, e, opts.NoSync)
			_ = db.Close()
			db = nil
			if err == nil {
				db, err = cachefile.OpenBolt(path, cachefile.BoltOptions{LockTimeout: opts.LockTimeout, NoSync: opts.NoSync, MustExist: true})
			}
		}
		if err != nil {
			return rep, fmt.Errorf("migrate %s from v%d to v%d: %w", path, p.From, p.To, err)
		}
		rep.Steps = append(rep.Steps, p.StepInfo)
		rep.To = p.To
		if opts.Logger.GetSink() != nil {
			opts.Logger.Info("Migration step done", "path", path, "from", fmt.Sprintf("v%d", p.From), "to", fmt.Sprintf("v%d", p.To),
				"rewrite", p.Rewrite, "duration", time.Since(stepStart).Round(time.Millisecond))
		}
		failpoint.Inject("migrations.afterStep") // the file is complete at p.To; later steps not begun
	}
	if len(ps) > 0 && rep.To >= 2 {
		rep.Stores, rep.Records, err = countRecords(db)
		if err != nil {
			return rep, fmt.Errorf("migrate %s: count what the v%d file holds: %w", path, rep.To, err)
		}
	}
	return rep, nil
}

// countRecords returns the stores of a file of schema v2 or later and the
// records they hold, from each store's count (no record is read).
func countRecords(db *bolt.DB) (stores, records int, err error) {
	err = db.View(func(tx *bolt.Tx) error {
		return cachefile.ForEachStoreTx(tx, func(_ string, b *cachefile.Buckets, err error) error {
			if err != nil {
				return err
			}
			n, err := b.Count()
			stores, records = stores+1, records+n
			return err
		})
	})
	return stores, records, err
}

// runInPlace applies a change, checks its result and commits, all in one
// write transaction.
func runInPlace(db *bolt.DB, p plannedStep, e *env) error {
	return db.Update(func(tx *bolt.Tx) error {
		if err := p.inPlace(tx, e); err != nil {
			return err
		}
		return checkResult(tx, p.To)
	})
}

// runRewrite fills a new file from the old one, checks it, and renames it
// over the old one. The old file stays untouched until the rename.
func runRewrite(ctx context.Context, db *bolt.DB, p plannedStep, e *env, noSync bool) error {
	work, err := createWork(e.path+tmpSuffix, e.size)
	if err != nil {
		return err
	}
	defer func() { _ = removeIfExists(e.scratchPath) }()
	stop := closeOnCancel(ctx, work)
	err = db.View(func(src *bolt.Tx) error { return p.rewrite(src, work, e) })
	if cerr := stop(); cerr != nil {
		discardWork(work)
		_ = removeIfExists(e.path + tmpSuffix) // a closed work file forgets its path
		return cerr
	}
	if err == nil {
		err = work.View(func(tx *bolt.Tx) error { return checkResult(tx, p.To) })
	}
	if err != nil {
		discardWork(work)
		return err
	}
	return commitWork(work, e.path, noSync)
}

// checkResult verifies that a step produced a file of version want that
// passes that version's check.
func checkResult(tx *bolt.Tx, want uint64) error {
	got, err := txVersion(tx)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrCheckFailed, err)
	}
	if got != want {
		return fmt.Errorf("%w: result is schema v%d, want v%d", ErrCheckFailed, got, want)
	}
	if err := checkFile(tx, want); err != nil {
		return fmt.Errorf("%w: %w", ErrCheckFailed, err)
	}
	return nil
}

// checkFile runs bbolt's structural check and the invariant checks of the
// schema version the file claims to be.
func checkFile(tx *bolt.Tx, version uint64) error {
	if err := cachefile.BoltCheck(tx); err != nil {
		return err
	}
	switch version {
	case 2, cachefile.Version:
		if ps := cachefile.CheckTx(tx, cachefile.CheckOptions{MaxProblems: 10, SkipBolt: true}); len(ps) > 0 {
			return fmt.Errorf("%d problem(s), first: %s", len(ps), ps[0])
		}
	case 1:
		return checkV1(tx)
	case 0:
		return v0.Check(tx)
	}
	return nil
}

// zeroLength reports whether path is an empty file (never opened by bbolt);
// a missing path is an error.
func zeroLength(path string) (bool, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return false, fmt.Errorf("open %s: %w", path, err)
	}
	return fi.Mode().IsRegular() && fi.Size() == 0, nil
}

// Versions returns the oldest schema version Migrate starts from and the
// newest it reaches (the version this build writes).
func Versions() (oldest, newest uint64) {
	oldest = cachefile.Version
	for _, s := range registry {
		oldest = min(oldest, s.from)
	}
	return oldest, cachefile.Version
}
