//go:build failpoints

package failpoints_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/failpoint"
	"github.com/boltinformer/boltinformer/internal/testutil"
	"github.com/boltinformer/boltinformer/migrations"
	"github.com/boltinformer/boltinformer/migrations/migrationstest"
)

// migrateTxMax makes a rewrite commit every few KiB: many batches.
const migrateTxMax = 16 << 10

// migratedAt is the time every migration writes (created-at, updated-at),
// so that two migrations of one file give the same bytes.
func migratedAt() time.Time { return time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC) }

// migrateChild migrates FP_DB to the current schema once.
func migrateChild() int {
	fmt.Println(testutil.ReadyLine)
	if _, err := migrations.Migrate(os.Getenv("FP_DB"), migrations.Options{LockTimeout: 5 * time.Second, TxMaxSize: migrateTxMax, Now: migratedAt}); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	return 0
}

// compactChild compacts FP_DB in place once.
func compactChild() int {
	fmt.Println(testutil.ReadyLine)
	if _, err := migrations.Compact(os.Getenv("FP_DB"), "", migrations.CompactOptions{LockTimeout: 5 * time.Second, TxMaxSize: migrateTxMax}); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	return 0
}

// TestFailpointMigration kills a migration (v0 → v1 → v2, each step a
// rewrite into a work file renamed over the original) between batch
// commits of a rewrite, just before and just after a rename, and between
// steps. The file left must be the complete old version, byte for byte in
// content, or a complete newer one that passes its version's check; the
// next Migrate must finish, remove the work files and keep every object.
func TestFailpointMigration(t *testing.T) {
	h := history()
	rv := h.Base + 300
	objs := h.ObjectsAt(rv)
	fixtures := t.TempDir()
	v0 := filepath.Join(fixtures, "v0.db")
	stores := make([]runtime.Object, len(objs))
	for i, p := range objs {
		stores[i] = p
	}
	if err := migrationstest.WriteV0(v0, migrationstest.V0Store{Name: storeName, RV: strconv.FormatInt(rv, 10), Objects: stores, Indexers: indexers()}); err != nil {
		t.Fatal(err)
	}
	v1file := filepath.Join(fixtures, "v1.db")
	testutil.CopyFile(t, v0, v1file)
	one := uint64(1)
	if _, err := migrations.Migrate(v1file, migrations.Options{Target: &one, NoSync: true, Now: migratedAt}); err != nil {
		t.Fatal(err)
	}
	v2file := filepath.Join(fixtures, "v2.db")
	testutil.CopyFile(t, v1file, v2file)
	two := uint64(2)
	if _, err := migrations.Migrate(v2file, migrations.Options{Target: &two, NoSync: true, Now: migratedAt}); err != nil {
		t.Fatal(err)
	}
	dumps := map[uint64][]string{0: migrationstest.Dump(t, v0), 1: migrationstest.Dump(t, v1file), 2: migrationstest.Dump(t, v2file)}
	for _, tc := range []struct {
		from uint64
		fp   string
		want uint64 // the schema version the file must be at after the kill
	}{
		{0, "migrations.afterBatchCommit@3", 0},
		{0, "migrations.beforeRename@1", 0},
		{0, "migrations.afterRename@1", 1},
		{0, "migrations.afterStep@1", 1},
		{1, "migrations.afterBatchCommit@3", 1},
		{0, "migrations.beforeRename@2", 1},
		{0, "migrations.afterRename@2", 2},
		{0, "migrations.afterStep@2", 2},
		{2, "migrations.afterBatchCommit@3", 2},
		{0, "migrations.beforeRename@3", 2},
		{0, "migrations.afterRename@3", cachefile.Version},
		{0, "migrations.afterStep@3", cachefile.Version},
	} {
		t.Run(fmt.Sprintf("v%d %s", tc.from, tc.fp), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cache.db")
			testutil.CopyFile(t, map[uint64]string{0: v0, 1: v1file, 2: v2file}[tc.from], path)
			child := testutil.StartChild(t, "migrate", failpoint.Env+"="+tc.fp, "FP_DB="+path)
			child.WaitKilled(killWithin)
			if got := migrationstest.SchemaVersion(t, path); got != tc.want {
				t.Fatalf("after the kill the file is v%d, want v%d", got, tc.want)
			}
			switch tc.want {
			case 0, 1, 2:
				// The complete old (or intermediate) version: the same
				// content as a clean migration to it, and its check passes.
				if d := migrationstest.DiffDumps(dumps[tc.want], migrationstest.Dump(t, path)); d != "" {
					t.Fatalf("the v%d file left is not complete: %s", tc.want, d)
				}
				rep, err := migrations.Plan(path, migrations.Options{})
				if err != nil || rep.From != tc.want {
					t.Fatalf("plan on the v%d file left: %v, %v", tc.want, rep, err)
				}
			default:
				checkStore(t, path, rv, objs)
			}
			t.Logf("killed at %s: file is v%d, work files %v", tc.fp, tc.want, leftovers(t, path))
			if _, err := migrations.Migrate(path, migrations.Options{NoSync: true}); err != nil {
				t.Fatalf("migrate after the kill: %v", err)
			}
			if l := leftovers(t, path); len(l) > 0 {
				t.Fatalf("work files left after a clean run: %v", l)
			}
			checkStore(t, path, rv, objs)
		})
	}
}

// TestFailpointCompaction kills an in-place compaction after bolt.Compact
// has copied and the copy passed its check (bolt.Compact copies in one
// call with no hook inside it), just before the rename, and just after
// it. The file must hold the same content as before, pass cachefile.Check,
// and compact cleanly afterwards.
func TestFailpointCompaction(t *testing.T) {
	h := history()
	fixture := filepath.Join(t.TempDir(), "churned.db")
	syncTo(t, fixture, h, h.Final()) // 1500 events of churn leave free pages
	orig := migrationstest.Dump(t, fixture)
	objs := h.ObjectsAt(h.Final())
	for _, fp := range []string{"migrations.compactCopied@1", "migrations.beforeRename@1", "migrations.afterRename@1"} {
		t.Run(fp, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cache.db")
			testutil.CopyFile(t, fixture, path)
			before := size(t, path)
			child := testutil.StartChild(t, "compact", failpoint.Env+"="+fp, "FP_DB="+path)
			child.WaitKilled(killWithin)
			after := size(t, path)
			if d := migrationstest.DiffDumps(orig, migrationstest.Dump(t, path)); d != "" {
				t.Fatalf("after the kill the file's content differs: %s", d)
			}
			if fp == "migrations.afterRename@1" && after >= before {
				t.Fatalf("killed after the rename, the file is %d bytes, not the compacted copy (was %d)", after, before)
			}
			if fp != "migrations.afterRename@1" && after != before {
				t.Fatalf("killed before the rename, the file changed size from %d to %d", before, after)
			}
			checkStore(t, path, h.Final(), objs)
			t.Logf("killed at %s: %d → %d bytes, work files %v", fp, before, after, leftovers(t, path))
			if _, err := migrations.Compact(path, "", migrations.CompactOptions{NoSync: true}); err != nil {
				t.Fatalf("compact after the kill: %v", err)
			}
			if l := leftovers(t, path); len(l) > 0 {
				t.Fatalf("work files left after a clean run: %v", l)
			}
			checkStore(t, path, h.Final(), objs)
		})
	}
}

// checkStore checks a current-schema file: cachefile.Check, Store.Verify,
// and the store holds exactly objs at RV rv.
func checkStore(t *testing.T, path string, rv int64, objs []*v1.Pod) {
	t.Helper()
	for _, p := range cachefile.Check(path, cachefile.CheckOptions{}, time.Second) {
		t.Errorf("%s", p)
	}
	if t.Failed() {
		t.FailNow()
	}
	st, err := boltstore.Open(path, storeName, cachefile.Options{NoSync: true, Logger: testutil.Logger(t)}, boltstore.StoreOptions{Object: &v1.Pod{}, Indexers: indexers()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Verify(); err != nil {
		t.Fatal(err)
	}
	if got := st.LastStoreSyncResourceVersion(); got != strconv.FormatInt(rv, 10) {
		t.Fatalf("stored RV %q, want %d", got, rv)
	}
	got, want := map[string]string{}, map[string]string{}
	for _, o := range st.List() {
		p := o.(*v1.Pod)
		got[p.Namespace+"/"+p.Name] = p.ResourceVersion
	}
	for _, p := range objs {
		want[p.Namespace+"/"+p.Name] = p.ResourceVersion
	}
	if d := diffStates(got, want); d != "" {
		t.Fatal(d)
	}
}

// leftovers lists the work files next to path.
func leftovers(t *testing.T, path string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if n := e.Name(); strings.HasPrefix(n, filepath.Base(path)+".") && !strings.HasSuffix(n, ".lock") {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

func size(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}
