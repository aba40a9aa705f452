package boltinformer_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/boltstore/boltstoretest"
	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

const (
	crashInitial = 300
	crashEvents  = 3000
	crashKeys    = 400
)

func crashIndexers() cache.Indexers {
	return cache.Indexers{
		cache.NamespaceIndex: cache.MetaNamespaceIndexFunc,
		"node":               func(obj interface{}) ([]string, error) { return []string{obj.(*v1.Pod).Spec.NodeName}, nil },
	}
}

// crashChild runs an informer on a testutil.HistoryServer until it is killed.
// Environment: the seed, the file, when the history started, and below
// which RV a watch is expired.
func crashChild() int {
	seed, _ := strconv.ParseInt(os.Getenv("CRASH_SEED"), 10, 64)
	path := os.Getenv("CRASH_DB")
	expire, _ := strconv.ParseInt(os.Getenv("CRASH_EXPIRE_BELOW"), 10, 64)
	startMs, _ := strconv.ParseInt(os.Getenv("CRASH_START_MS"), 10, 64)
	srv := &testutil.HistoryServer{H: testutil.NewHistory(uint64(seed), crashInitial, crashEvents, crashKeys), Start: time.UnixMilli(startMs), PerMs: 2, ExpireBelow: expire}
	c, err := boltinformer.Open(path, boltinformer.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 3
	}
	inf, err := c.NewInformer(srv, &v1.Pod{}, boltinformer.InformerOptions{Indexers: crashIndexers(), PageSize: 40, BatchSize: 50})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 3
	}
	fmt.Println(testutil.ReadyLine)          // the parent's kill timer starts now
	inf.RunWithContext(context.Background()) // until SIGKILL
	return 0
}

// TestCrashAtRandomPoints kills an informer process at random points and
// checks invariants 1–4 of docs/design.md on what it left, then resumes
// and converges.
func TestCrashAtRandomPoints(t *testing.T) {
	seeds := 6
	if testing.Short() {
		seeds = 2
	}
	for seed := int64(1); seed <= int64(seeds); seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			r := rand.New(rand.NewSource(seed))
			s := testutil.NewHistory(uint64(seed), crashInitial, crashEvents, crashKeys)
			path := filepath.Join(t.TempDir(), "cache.db")
			lastRV := int64(0)
			// The server's head RV advances with time since the first child
			// started, across the children: the history goes on while they die.
			start := time.Now()
			for kill := 0; kill < 4; kill++ {
				env := []string{"CRASH_SEED=" + strconv.FormatInt(seed, 10), "CRASH_DB=" + path, fmt.Sprintf("CRASH_START_MS=%d", start.UnixMilli())}
				// Every other seed, the second run finds its stored RV expired: it relists, and may die mid-relist.
				if seed%2 == 0 && kill == 1 {
					env = append(env, fmt.Sprintf("CRASH_EXPIRE_BELOW=%d", lastRV+1))
				}
				testutil.StartChild(t, "crash", env...).KillAfter(time.Duration(30+r.Intn(500)) * time.Millisecond)
				lastRV = checkCrashedFile(t, path, s)
				t.Logf("kill %d: stored RV %d of %d", kill, lastRV, s.Final())
			}
			// Resume in-process against the whole history and converge.
			srv := &testutil.HistoryServer{H: s, Start: time.Now().Add(-time.Hour), PerMs: 10}
			inf, _, stop := runInformer(t, path, srv, boltinformer.InformerOptions{Indexers: crashIndexers(), PageSize: 40})
			want := s.StateAt(s.Final())
			testutil.Eventually(t, "convergence to the final state", waitTimeout, func() bool { return maps.Equal(storeKeys(inf), want) })
			stop()
		})
	}
}

// checkCrashedFile opens what a killed process left and checks it holds
// exactly the script's state at its stored RV, unless a relist was in
// progress (then the marker forces a relist on the next start). It returns
// the stored RV.
func checkCrashedFile(t *testing.T, path string, s *testutil.History) int64 {
	t.Helper()
	boltstoretest.CheckFile(t, path)
	st, err := boltstore.Open(path, "Pod.v1", cachefile.Options{Logger: testutil.Logger(t)}, boltstore.StoreOptions{Object: &v1.Pod{}, Indexers: crashIndexers()})
	if err != nil {
		t.Fatalf("reopen after SIGKILL: %v", err)
	}
	defer st.Close()
	if err := st.Verify(); err != nil { // invariant 4 (and every record decodes)
		t.Fatalf("after SIGKILL: %v", err)
	}
	rvStr := st.LastStoreSyncResourceVersion()
	relisting, _, _ := st.RelistInProgress()
	if rvStr == "" || relisting {
		return 0 // invariant 3: no RV was claimed for a partial list
	}
	rv, err := strconv.ParseInt(rvStr, 10, 64)
	if err != nil {
		t.Fatalf("stored RV %q does not parse", rvStr)
	}
	got := map[string]string{}
	for _, o := range st.List() {
		p := o.(*v1.Pod)
		got[p.Namespace+"/"+p.Name] = p.ResourceVersion
	}
	if want := s.StateAt(rv); !maps.Equal(got, want) { // invariant 1
		t.Fatalf("after SIGKILL the store at RV %d holds %d objects, the history has %d: the watermark does not match the data", rv, len(got), len(want))
	}
	return rv
}
