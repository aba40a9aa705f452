package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	bolt "go.etcd.io/bbolt"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer/encryption"
	"github.com/boltinformer/boltinformer/internal/admin"
	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/snapshot"
)

// knownIndexFuncs are the IndexFuncs check can re-run by index name.
var knownIndexFuncs = cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}

// checkOptions are the flags of cachectl check.
type checkOptions struct {
	source      sourceOptions
	maxProblems int
}

// AddFlags adds check's flags.
func (o *checkOptions) AddFlags(fs *pflag.FlagSet) {
	o.source.AddFlags(fs)
	fs.IntVar(&o.maxProblems, "max-problems", 20, "Stop after this many problems")
}

func newCheckCommand(e *env) *cobra.Command {
	o := &checkOptions{source: newSourceOptions(true)}
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Check a cache file's structure and boltinformer's invariants",
		Long: `Check a cache file without writing to it:

  1. bbolt's structural check (pages, freelist) and boltinformer's invariants
     on the raw records: every record's envelope decodes, the stored
     resourceVersions parse, every index entry points to a record that lists
     its value and every value a record lists has its entry, no leftover
     relist state;
  2. per store, every object decodes with the store's type and its key is
     its namespace/name; where check knows every IndexFunc of the store (the
     "namespace" index), it re-runs them and compares their values with the
     stored ones (boltindexer's Store.Verify).

It prints what it checked and exits 1 with the first problems found.

With --socket, it checks a snapshot taken through the owning process's admin
socket (restored into a temporary directory): a consistent copy of the live
file.`,
		Example: `  cachectl check --db cache.db
  cachectl check --db cache.db --max-problems 100
  cachectl check --socket /run/agent.sock`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.source.Validate(cmd); err != nil {
				return err
			}
			if o.maxProblems <= 0 {
				return usageErrorf(cmd, "--max-problems must be positive")
			}
			return o.run(cmd.Context(), e)
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

// checkReport collects what check found. A problem is counted once:
// the raw check (CheckTx) and the decoding pass may find the same one, and
// the second report wraps the first's text.
type checkReport struct {
	max      int
	problems []string
	// found counts every report, repeats included (a phase's verdict).
	found int
}

func (r *checkReport) add(p string) bool {
	r.found++
	for _, q := range r.problems {
		if strings.Contains(p, q) {
			return !r.full() // found again, wrapped by decoding or Verify
		}
	}
	if len(r.problems) < r.max {
		r.problems = append(r.problems, p)
	}
	return len(r.problems) < r.max
}

func (r *checkReport) full() bool { return len(r.problems) >= r.max }

// print ends a check's output: OK with the time it took, or the problems,
// one a line.
func (r *checkReport) print(out io.Writer, took time.Duration) {
	if len(r.problems) == 0 {
		fmt.Fprintf(out, "OK (%s)\n", took.Round(1e6))
		return
	}
	fmt.Fprintf(out, "%d problem(s):\n", len(r.problems))
	for _, p := range r.problems {
		fmt.Fprintf(out, "  %s\n", p)
	}
}

func (o *checkOptions) run(ctx context.Context, e *env) error {
	if o.source.socket != "" {
		return o.runSocket(ctx, e)
	}
	l, err := o.source.openFile()
	if errors.Is(err, cachefile.ErrNeedsMigration) {
		return o.runOlder(e)
	}
	if err != nil {
		return err
	}
	defer l.Close()
	return checkDB(ctx, e, l, o.source.db, o.maxProblems, fileModeProblem(o.source.db))
}

// runOlder checks a file of the schema version before this build's (left
// by a revert, or not yet migrated): the raw check of pages, records and
// index entries in that version's layout. Objects are decoded only in the
// current layout, so that part waits for a migrate.
func (o *checkOptions) runOlder(e *env) error {
	out := e.streams.Out
	start := e.now()
	rep := &checkReport{max: o.maxProblems}
	if p := fileModeProblem(o.source.db); p != "" {
		rep.add(p)
	}
	for _, p := range cachefile.Check(o.source.db, cachefile.CheckOptions{MaxProblems: o.maxProblems}, o.source.timeout) {
		rep.add(p.String())
	}
	fmt.Fprintf(out, "%s: an older schema than this build's v%d (objects are decoded after: cachectl migrate --db %s)\n", o.source.db, cachefile.Version, o.source.db)
	fmt.Fprintf(out, "  pages, freelist, records, index entries, resource versions: %s\n", verdict(len(rep.problems)))
	rep.print(out, e.now().Sub(start))
	if len(rep.problems) == 0 {
		return nil
	}
	return newError(errCheckFailed, "check found %d problem(s) in %s, first: %s", len(rep.problems), o.source.db, rep.problems[0])
}

// runSocket checks a live file: it takes a snapshot through the socket
// (a consistent copy), restores it into a temporary directory and checks
// the restored file.
func (o *checkOptions) runSocket(ctx context.Context, e *env) error {
	r, info, err := o.source.openInfo(ctx)
	if err != nil {
		return err
	}
	defer r.Close()
	dir, err := os.MkdirTemp("", "cachectl-check-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	snap, db := filepath.Join(dir, "snapshot"), filepath.Join(dir, "cache.db")
	prog := e.newProgress("taking a snapshot through "+o.source.socket, info.Size, true)
	err = writeFileAtomically(snap, func(w io.Writer) error {
		_, err := r.Snapshot(ctx, io.MultiWriter(w, prog))
		return err
	})
	prog.finish()
	if err != nil {
		return fmt.Errorf("snapshot through %s: %w", o.source.socket, err)
	}
	if _, err := snapshot.Restore(snap, db, snapshot.RestoreOptions{NoSync: true}); err != nil {
		return fmt.Errorf("%w: the snapshot taken through %s does not restore: %v", errCheckFailed, o.source.socket, err)
	}
	keys, err := o.source.keys()
	if err != nil {
		return err
	}
	l, err := admin.OpenFile(db, cachefile.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	defer l.Close()
	l.SetKeys(keys)
	return checkDB(ctx, e, l, info.Path+" (a snapshot through "+o.source.socket+")", o.maxProblems, "")
}

// checkDB checks the file l reads and prints the report; it returns
// errCheckFailed when it found problems.
// modeProblem, when not empty, is reported first (see fileModeProblem).
func checkDB(ctx context.Context, e *env, l *admin.Local, path string, maxProblems int, modeProblem string) error {
	out := e.streams.Out
	start := e.now()
	info, err := l.Info(ctx)
	if err != nil {
		return err
	}
	total := 0
	for _, s := range info.Stores {
		total += s.Objects
	}
	rep := &checkReport{max: maxProblems}
	if modeProblem != "" {
		rep.add(modeProblem)
	}
	prog := e.newProgress("checking pages, records and index entries", 0, false)
	stop := prog.tick()
	err = l.DB().View(func(tx *bolt.Tx) error {
		for _, p := range cachefile.CheckTx(tx, cachefile.CheckOptions{MaxProblems: maxProblems}) {
			rep.add(p.String())
		}
		return nil
	})
	stop()
	if err != nil {
		prog.finish()
		return fmt.Errorf("check %s: %w", path, err)
	}
	prog.clear()
	fmt.Fprintf(out, "%s: schema v%d, %s, %d store(s), %d object(s)\n", path, info.SchemaVersion, humanBytes(info.Size), len(info.Stores), total)
	fmt.Fprintf(out, "  pages, freelist, records, index entries, resource versions: %s\n", verdict(len(rep.problems)))

	for _, s := range info.Stores {
		if rep.full() || ctx.Err() != nil {
			break
		}
		before := rep.found
		prog.setLabel("decoding "+s.Name, int64(s.Objects))
		what, err := checkStore(ctx, l.DB(), s, l.Keys(), rep, prog)
		if err != nil {
			prog.finish()
			return err
		}
		prog.clear()
		fmt.Fprintf(out, "  store %s: %d object(s) %s: %s\n", s.Name, s.Objects, what, verdict(rep.found-before))
	}
	prog.finish()
	if err := ctx.Err(); err != nil {
		return err
	}
	rep.print(out, e.now().Sub(start))
	if len(rep.problems) == 0 {
		return nil
	}
	more := ""
	if rep.full() {
		more = fmt.Sprintf(" (stopped at --max-problems=%d)", maxProblems)
	}
	return newError(errCheckFailed, "check found %d problem(s) in %s%s, first: %s", len(rep.problems), path, more, rep.problems[0])
}

func verdict(problems int) string {
	if problems == 0 {
		return "ok"
	}
	return fmt.Sprintf("%d problem(s)", problems)
}

// checkStore decodes every object of one store and, when every stored
// index has a known IndexFunc, verifies the index values. It returns what
// it checked, for the report.
func checkStore(ctx context.Context, db *cachefile.DB, s admin.StoreInfo, keys *encryption.Keyring, rep *checkReport, prog *progress) (string, error) {
	indexers := cache.Indexers{}
	var unknown []string
	for n := range s.Indexes {
		if f, ok := knownIndexFuncs[n]; ok {
			indexers[n] = f
		} else {
			unknown = append(unknown, n)
		}
	}
	sort.Strings(unknown)
	st, err := admin.OpenStore(ctx, db, s.Name, indexers, keys)
	if errors.Is(err, boltstore.ErrEncrypted) {
		return "not decoded (" + oneLine(err) + "; pass --encryption-key-file to decode)", nil
	}
	if err != nil {
		if errors.Is(err, admin.ErrUnknownType) && !knownType(s.Identity) {
			return "not decoded (" + oneLine(err) + ")", nil
		}
		rep.add(fmt.Sprintf("store %s: %s", s.Name, oneLine(err)))
		return "decode", nil
	}
	if len(unknown) == 0 {
		if err := st.Verify(); err != nil {
			if !errors.Is(err, boltstore.ErrInconsistent) {
				return "", fmt.Errorf("verify store %s: %w", s.Name, err)
			}
			rep.add(oneLine(err))
		}
		prog.add(int64(s.Objects))
		what := "decode, keys match"
		if len(s.Indexes) > 0 {
			what += ", index values re-derived"
		}
		return what, nil
	}
	err = st.ForEachKey(func(key string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		prog.add(1)
		obj, ok, err := st.GetByKey(key)
		switch {
		case err != nil:
			if !rep.add(oneLine(err)) {
				return errStopWalk
			}
		case !ok:
			// Deleted since the key walk began: impossible read-only, harmless.
		default:
			if k, kerr := cache.MetaNamespaceKeyFunc(obj); kerr != nil || k != key {
				if !rep.add(fmt.Sprintf("store %s key %q: object's key is %q (%v)", s.Name, key, k, kerr)) {
					return errStopWalk
				}
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStopWalk) {
		return "", err
	}
	return fmt.Sprintf("decode, keys match (IndexFuncs of %s unknown: their entries were checked against the records only)", strings.Join(unknown, ", ")), nil
}

var errStopWalk = errors.New("stop")

// knownType reports whether client-go's scheme knows a store's kind.
func knownType(id *cachefile.Identity) bool {
	return id != nil && id.Kind != "" && scheme.Scheme.Recognizes(schema.GroupVersionKind{Group: id.Group, Version: id.Version, Kind: id.Kind})
}
