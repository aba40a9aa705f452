//go:build failpoints

package failpoints_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/boltindexer"
	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/failpoint"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// informerChild runs an informer on the file FP_DB against the history
// server (head at FP_HEAD, WATCHes below FP_EXPIRE answered 410) until a
// failpoint kills it. Its handler prints "stored RV" each
// time the stored RV it reads after a notification changes, and "seen RV"
// each time the highest RV of a notified object grows: what the process
// had acknowledged before it died.
func informerChild() int {
	num := func(k string) int64 { v, _ := strconv.ParseInt(os.Getenv(k), 10, 64); return v }
	h := history()
	// The server's head is at FP_HEAD (or the initial objects) now, when
	// the informer is about to start: how long this process took to start
	// does not change what it lists.
	head := max(num("FP_HEAD"), h.Base)
	srv := &testutil.HistoryServer{H: h, Start: time.Now().Add(-time.Duration((head-h.Base)/perMs) * time.Millisecond), PerMs: perMs, ExpireBelow: num("FP_EXPIRE")}
	c, err := boltinformer.Open(os.Getenv("FP_DB"), boltinformer.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 3
	}
	inf, err := c.NewInformer(srv, &v1.Pod{}, boltinformer.InformerOptions{Indexers: indexers(), PageSize: pageSize, BatchSize: batchSize})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 3
	}
	if _, err := inf.AddEventHandler(&reporter{store: inf.Store()}); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 3
	}
	go func() {
		<-inf.HasSyncedChecker().Done()
		fmt.Println(syncedLine)
	}()
	fmt.Println(testutil.ReadyLine)
	inf.RunWithContext(context.Background()) // until a failpoint kills the process
	fmt.Fprintln(os.Stderr, "child: the informer stopped by itself")
	return 4
}

// syncedLine is what a child prints once HasSynced is true.
const syncedLine = "synced"

type reporter struct {
	store *boltindexer.Store

	mu     sync.Mutex
	stored string
	seen   int64
}

func (r *reporter) note(obj any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if p, ok := obj.(*v1.Pod); ok {
		if rv, _ := strconv.ParseInt(p.ResourceVersion, 10, 64); rv > r.seen {
			r.seen = rv
			fmt.Println("seen", rv)
		}
	}
	if s := r.store.LastStoreSyncResourceVersion(); s != r.stored {
		r.stored = s
		fmt.Println("stored", s)
	}
}

func (r *reporter) OnAdd(obj any, _ bool) { r.note(obj) }
func (r *reporter) OnUpdate(_, obj any)   { r.note(obj) }
func (r *reporter) OnDelete(obj any)      { r.note(obj) }

// reported is the highest "stored" and "seen" RV a child printed.
func reported(lines []string) (stored, seen int64) {
	for _, l := range lines {
		kind, v, ok := strings.Cut(l, " ")
		n, err := strconv.ParseInt(v, 10, 64)
		if !ok || err != nil {
			continue
		}
		switch kind {
		case "stored":
			stored = max(stored, n)
		case "seen":
			seen = max(seen, n)
		}
	}
	return stored, seen
}

// TestFailpointInformer kills an informer process at each named step of
// the pipeline, deterministically (NAME@N is the Nth time the step is
// reached), then checks the file it left: it validates page by page and
// passes cachefile.Check and Store.Verify (invariant 4); the stored RV is
// not below any RV the process acknowledged (a stored RV it read, and,
// unless a relist is in progress, any object RV its handler saw); with no
// relist in progress the store holds exactly the history's state at its
// stored RV (invariant 1); a relist cut short left the RV where it was
// (invariant 3). Then an informer resumes from the file against the same
// history and converges to its end, store and handler view alike, with
// every delete after the crash applied.
func TestFailpointInformer(t *testing.T) {
	h := history()
	prepared := h.Base + 300
	for _, tc := range []struct {
		name string
		fp   string
		// prepare syncs the file to RV prepared first, and the child's
		// WATCH from it gets 410 Gone: the child relists over a full store.
		prepare bool
		// midRelist: the kill comes before the relist ends, so the
		// stored RV must not have moved.
		midRelist bool
		// torn: after the kill, the newest meta page is torn (see tearNewestMeta).
		torn bool
	}{
		{name: "before the data write", fp: "cachefile.beforeWrite@12"},
		{name: "before the commit", fp: "cachefile.beforeCommit@14"},
		{name: "after the commit, before handlers", fp: "boltinformer.afterCommit@6"},
		{name: "between the data and meta syncs", fp: "boltinformer.afterCommit@6", torn: true},
		{name: "between cold-start list pages", fp: "listwatcher.betweenListPages@3", midRelist: true},
		{name: "between relist pages", fp: "listwatcher.betweenListPages@2", prepare: true, midRelist: true},
		{name: "relist commit", fp: "cachefile.beforeCommit@3", prepare: true, midRelist: true},
		{name: "after the relist's sweep, before its staged objects are stored", fp: "boltinformer.afterSweepRelist@1", prepare: true, midRelist: true},
		{name: "between the relist's pages of staged objects", fp: "boltinformer.afterApplyStaged@1", prepare: true, midRelist: true},
		{name: "after the relist, before the informer syncs", fp: "boltinformer.afterFinishRelist@1", prepare: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cache.db")
			var minRV, expire int64
			if tc.prepare {
				syncTo(t, path, h, prepared)
				// The child's server starts at the prepared RV: it never lists older data.
				minRV, expire = prepared, prepared+1
			}
			began := time.Now()
			child := testutil.StartChild(t, "informer",
				failpoint.Env+"="+tc.fp, "FP_DB="+path,
				fmt.Sprintf("FP_HEAD=%d", minRV), fmt.Sprintf("FP_EXPIRE=%d", expire))
			child.WaitKilled(killWithin)
			stored, seen := reported(child.Lines())
			var olderTxid uint64
			if tc.torn {
				olderTxid = tearNewestMeta(t, path)
			}
			rv, relisting := checkCrashed(t, path, h, crashReport{minRV: minRV, stored: stored, seen: seen, torn: tc.torn, olderTxid: olderTxid})
			if tc.midRelist && rv != minRV {
				t.Fatalf("killed mid-relist, the stored RV moved from %d to %d", minRV, rv)
			}
			if tc.prepare && !tc.midRelist && (rv <= minRV || relisting) {
				t.Fatalf("killed after the relist ended, the stored RV is %d (relisting %t), want above %d", rv, relisting, minRV)
			}
			t.Logf("%s: killed after %v; child acknowledged stored RV %d, saw RV %d; file at RV %d, relisting %t",
				tc.fp, time.Since(began).Round(time.Millisecond), stored, seen, rv, relisting)
			resume(t, path, h, rv)
		})
	}
}

type crashReport struct {
	minRV, stored, seen int64
	torn                bool
	olderTxid           uint64
}

// checkCrashed checks the file a killed child left and returns its stored
// RV and whether a relist is in progress.
func checkCrashed(t *testing.T, path string, h *testutil.History, r crashReport) (int64, bool) {
	t.Helper()
	if err := cachefile.Validate(path, cachefile.ValidatePages); err != nil {
		t.Fatalf("after the kill: %v", err)
	}
	if r.torn {
		// bbolt falls back to the older meta page; Validate passed on the
		// same choice (the torn page fails its checksum).
		db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
		if err != nil {
			t.Fatalf("bbolt open after a torn meta write: %v", err)
		}
		var txid int
		_ = db.View(func(tx *bolt.Tx) error { txid = tx.ID(); return nil })
		_ = db.Close()
		if uint64(txid) != r.olderTxid {
			t.Fatalf("bbolt chose txid %d, want the older meta page's %d", txid, r.olderTxid)
		}
	}
	if _, err := os.Lstat(cachefile.MarkerPath(path)); err == nil {
		// Killed while a new file was built without fsync: it may be torn
		// after a power loss, so nothing may read it, and the next writable
		// open discards it.
		if r.minRV > 0 {
			t.Fatalf("a file synced to RV %d before the child ran has the marker %s", r.minRV, cachefile.MarkerPath(path))
		}
		db, err := cachefile.Open(path, cachefile.Options{ReadOnly: true, LockTimeout: time.Second})
		if err == nil {
			_ = db.Close()
		}
		if !errors.Is(err, cachefile.ErrNotDurable) {
			t.Fatalf("a read-only open of a file killed in its unsynced build: %v, want ErrNotDurable", err)
		}
		return 0, false
	}
	for _, p := range cachefile.Check(path, cachefile.CheckOptions{}, time.Second) {
		t.Errorf("after the kill: %s", p)
	}
	if t.Failed() {
		t.FailNow()
	}
	st, err := boltstore.Open(path, storeName, cachefile.Options{Logger: testutil.Logger(t)}, boltstore.StoreOptions{Object: &v1.Pod{}, Indexers: indexers()})
	if err != nil {
		t.Fatalf("reopen after the kill: %v", err)
	}
	defer st.Close()
	if err := st.Verify(); err != nil {
		t.Fatalf("after the kill: %v", err)
	}
	relisting, _, err := st.RelistInProgress()
	if err != nil {
		t.Fatal(err)
	}
	var rv int64
	if s := st.LastStoreSyncResourceVersion(); s != "" {
		if rv, err = strconv.ParseInt(s, 10, 64); err != nil {
			t.Fatalf("stored RV %q does not parse", s)
		}
	}
	switch {
	case rv < r.minRV:
		t.Fatalf("the stored RV went back from %d (synced before the child ran) to %d", r.minRV, rv)
	case !r.torn && rv < r.stored:
		// A torn meta write undoes the last commit, which never returned
		// in the world it simulates; only the next check applies there.
		t.Fatalf("the stored RV went back from %d (read by the child after a commit) to %d", r.stored, rv)
	case !relisting && rv < r.seen:
		t.Fatalf("the child's handler saw RV %d, the file is at RV %d: a notified change is lost", r.seen, rv)
	}
	if !relisting && rv > 0 {
		got := map[string]string{}
		for _, o := range st.List() {
			p := o.(*v1.Pod)
			got[p.Namespace+"/"+p.Name] = p.ResourceVersion
		}
		if d := diffStates(got, h.StateAt(rv)); d != "" {
			t.Fatalf("the store at RV %d is not the history's state at RV %d: %s", rv, rv, d)
		}
	}
	return rv, relisting
}

// tearNewestMeta simulates a crash between bbolt's data sync and its meta
// sync. bbolt commits by writing the transaction's data pages, fsyncing,
// then writing the meta page (the two meta pages alternate by txid) and
// fsyncing again; at open it takes the valid meta page with the higher
// txid. A power loss in between leaves the new data pages on disk but a
// meta page that was not written, or written in part: its checksum fails,
// and bbolt falls back to the other meta page, the previous transaction,
// whose pages the last transaction never overwrote (bbolt frees pages only
// for later transactions). That point lies inside tx.Commit and cannot be
// instrumented without changing bbolt, so the test kills the process after
// a commit whose handlers were not yet notified, and then breaks the
// checksum of the newest meta page, which is what the torn write leaves.
// It returns the txid of the older meta page, the one that must win.
func tearNewestMeta(t *testing.T, path string) uint64 {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const hdr, txidAt, sumAt = 16, 48, 56 // page header; meta's txid and checksum offsets
	read := func(off int64) []byte {
		b := make([]byte, hdr+64)
		if _, err := f.ReadAt(b, off); err != nil {
			t.Fatal(err)
		}
		m := b[hdr:]
		h := fnv.New64a()
		_, _ = h.Write(m[:sumAt])
		if binary.LittleEndian.Uint64(m[sumAt:]) != h.Sum64() {
			t.Fatalf("meta page at %d is already invalid before the tear", off)
		}
		return m
	}
	m0 := read(0)
	pageSize := int64(binary.LittleEndian.Uint32(m0[8:]))
	m1 := read(pageSize)
	tx0, tx1 := binary.LittleEndian.Uint64(m0[txidAt:]), binary.LittleEndian.Uint64(m1[txidAt:])
	newest, older := int64(0), tx1
	if tx1 > tx0 {
		newest, older = pageSize, tx0
	}
	if d := max(tx0, tx1) - min(tx0, tx1); d != 1 {
		t.Fatalf("meta pages at txids %d and %d, want consecutive", tx0, tx1)
	}
	// The second half of the meta (root … checksum) as a torn write leaves it: zeros.
	if _, err := f.WriteAt(make([]byte, 32), newest+hdr+32); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	return older
}

// resume runs an informer from the file against the whole history and
// waits until both the store and the handler's view (replay plus events)
// equal the history's end; keys deleted after crashRV must be gone.
func resume(t *testing.T, path string, h *testutil.History, crashRV int64) {
	t.Helper()
	srv := &testutil.HistoryServer{H: h, Start: time.Now().Add(-time.Hour), PerMs: 1000}
	inf, view, stop := runInformer(t, path, srv)
	defer stop()
	want := h.StateAt(h.Final())
	storeState := func() map[string]string {
		got := map[string]string{}
		for _, o := range inf.GetStore().List() {
			p := o.(*v1.Pod)
			got[p.Namespace+"/"+p.Name] = p.ResourceVersion
		}
		return got
	}
	deadline := time.Now().Add(time.Minute)
	for {
		ds, dv := diffStates(storeState(), want), diffStates(view.state(), want)
		if ds == "" && dv == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("resumed from RV %d, no convergence to RV %d in a minute: store: %s; handler view: %s", crashRV, h.Final(), ds, dv)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, key := range h.DeletedAfter(crashRV) {
		if _, ok, _ := inf.GetStore().GetByKey(key); ok {
			t.Fatalf("%s was deleted after RV %d and is still stored", key, crashRV)
		}
	}
}

// TestFailpointUnsyncedBuild kills an informer process while it makes its
// new file durable at its first sync (before the fsync, and between the
// fsync and the marker's removal). The child never reported HasSynced; the
// file it left keeps its marker, so nothing reads it (ErrNotDurable); the
// next start discards it, relists, and converges to the history's end with
// no object of the discarded file left over.
func TestFailpointUnsyncedBuild(t *testing.T) {
	h := history()
	for _, tc := range []struct{ name, fp string }{
		{name: "before the fsync", fp: "cachefile.beforeDurable@1"},
		{name: "before the marker is removed", fp: "cachefile.beforeRemoveMarker@1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cache.db")
			child := testutil.StartChild(t, "informer", failpoint.Env+"="+tc.fp, "FP_DB="+path, "FP_HEAD=0", "FP_EXPIRE=0")
			child.WaitKilled(killWithin)
			if child.Count(syncedLine) != 0 {
				t.Fatal("the child reported HasSynced before its new file was durable")
			}
			if _, err := os.Lstat(cachefile.MarkerPath(path)); err != nil {
				t.Fatalf("killed in MakeDurable, the marker is gone: %v", err)
			}
			stored, seen := reported(child.Lines())
			if rv, _ := checkCrashed(t, path, h, crashReport{stored: stored, seen: seen}); rv != 0 {
				t.Fatalf("a file killed in its unsynced build reads as at RV %d", rv)
			}
			resume(t, path, h, 0)
			if _, err := os.Lstat(cachefile.MarkerPath(path)); err == nil {
				t.Fatal("the marker survived the rebuild")
			}
		})
	}
}
