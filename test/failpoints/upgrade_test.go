//go:build failpoints

package failpoints_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/failpoint"
	"github.com/boltinformer/boltinformer/internal/testutil"
	"github.com/boltinformer/boltinformer/internal/testutil/schemafixture"
	"github.com/boltinformer/boltinformer/migrations/migrationstest"
)

// upgradeChild opens FP_DB with boltinformer.Open, which migrates an older
// file in place, and closes it.
func upgradeChild() int {
	fmt.Println(testutil.ReadyLine)
	c, err := boltinformer.Open(os.Getenv("FP_DB"), boltinformer.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	if err := c.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	return 0
}

// TestFailpointUpgradeInOpen kills a process while boltinformer.Open
// migrates a schema v0 file in place (v0 → v1 → v2 → v3, each step a
// rewrite renamed over the file): within a rewrite, around a rename,
// between steps, and after the last step before the file is opened. The
// file left is complete at some version; the next Open migrates what is
// left (or nothing) without a work file left behind, and its informer
// resumes from the stored RV with no LIST but the resume check.
func TestFailpointUpgradeInOpen(t *testing.T) {
	fixture := filepath.Join(t.TempDir(), "v0.db")
	if err := schemafixture.Write(fixture, 0, schemafixture.Now, schemafixture.Stores()...); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		fp   string
		want uint64 // the schema version the file must be at after the kill
	}{
		{"migrations.afterBatchCommit@1", 0},
		{"migrations.beforeRename@1", 0},
		{"migrations.afterRename@1", 1},
		{"migrations.afterStep@2", 2},
		{"migrations.beforeRename@3", 2},
		{"migrations.afterRename@3", cachefile.Version},
		{"boltinformer.afterUpgrade@1", cachefile.Version},
	} {
		t.Run(tc.fp, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cache.db")
			testutil.CopyFile(t, fixture, path)
			child := testutil.StartChild(t, "upgrade", failpoint.Env+"="+tc.fp, "FP_DB="+path)
			child.WaitKilled(killWithin)
			if got := migrationstest.SchemaVersion(t, path); got != tc.want {
				t.Fatalf("after the kill the file is v%d, want v%d", got, tc.want)
			}
			t.Logf("killed at %s: file is v%d, work files %v", tc.fp, tc.want, leftovers(t, path))
			resumeFixture(t, path)
			if l := leftovers(t, path); len(l) > 0 {
				t.Fatalf("work files left after the next start: %v", l)
			}
		})
	}
}

// resumeFixture opens path and runs an informer on the fixtures' store
// against their history: it must ask only for the resume check and a WATCH
// from the fixtures' RV, and reach the history's end.
func resumeFixture(t *testing.T, path string) {
	t.Helper()
	h := schemafixture.History()
	lw := &requestLog{lw: &testutil.HistoryServer{H: h, Start: time.Now().Add(-time.Hour), PerMs: 1000}}
	inf, _, stop := runInformer(t, path, lw)
	defer stop()
	want := h.StateAt(h.Final())
	testutil.EventuallyDiff(t, "the store to reach the history's end", time.Minute, func() string {
		got := map[string]string{}
		for _, o := range inf.GetStore().List() {
			p := o.(*v1.Pod)
			got[p.Namespace+"/"+p.Name] = p.ResourceVersion
		}
		if !maps.Equal(got, want) {
			return diffStates(got, want)
		}
		return ""
	})
	wantRequests := []string{`LIST rv="" limit=1`, fmt.Sprintf(`WATCH rv="%d"`, schemafixture.RV)}
	if got := lw.requests(); !slices.Equal(got, wantRequests) {
		t.Fatalf("requests %q, want only %q", got, wantRequests)
	}
}

// requestLog records each request, as `LIST rv="" limit=N` and
// `WATCH rv="X"`, before passing it on.
type requestLog struct {
	lw cache.ListerWatcherWithContext

	mu    sync.Mutex
	calls []string
}

func (r *requestLog) record(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, s)
}

func (r *requestLog) requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

func (r *requestLog) List(o metav1.ListOptions) (runtime.Object, error) {
	return r.ListWithContext(context.Background(), o)
}

func (r *requestLog) Watch(o metav1.ListOptions) (watch.Interface, error) {
	return r.WatchWithContext(context.Background(), o)
}

func (r *requestLog) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	r.record(fmt.Sprintf("LIST rv=%q limit=%d", o.ResourceVersion, o.Limit))
	return r.lw.ListWithContext(ctx, o)
}

func (r *requestLog) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	r.record(fmt.Sprintf("WATCH rv=%q", o.ResourceVersion))
	return r.lw.WatchWithContext(ctx, o)
}
