package cachefile

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/boltinformer/boltinformer/internal/testutil"
)

// holdTx is a write's Fn that says it runs, then waits for release: the
// commit it is in stays in flight meanwhile.
func holdTx(entered chan<- struct{}, release <-chan struct{}) func(*bolt.Tx) error {
	return func(*bolt.Tx) error {
		entered <- struct{}{}
		<-release
		return nil
	}
}

// waitUpdatesQueued waits until n callers of Update are queued, blocked
// until the commit that holdTx keeps in flight answers them.
func waitUpdatesQueued(t *testing.T, n int) {
	t.Helper()
	testutil.Eventually(t, fmt.Sprintf("%d queued writes", n), 10*time.Second, func() bool {
		return testutil.CountGoroutines(func(stack string) bool {
			return strings.Contains(stack, "[chan receive") && strings.Contains(stack, "cachefile.(*DB).Update(") && !strings.Contains(stack, "holdTx")
		}) == n
	})
}

// startHeldWrite starts a write whose commit stays in flight until the
// returned release is called; its error arrives on the returned channel.
func startHeldWrite(t *testing.T, db *DB) (release func(), done <-chan error) {
	t.Helper()
	entered, hold := make(chan struct{}), make(chan struct{})
	errc := make(chan error, 1)
	go func() { errc <- db.Update(&Write{Fn: holdTx(entered, hold)}) }()
	<-entered
	return sync.OnceFunc(func() { close(hold) }), errc
}

func putKey(key string) func(tx *bolt.Tx) error {
	return func(tx *bolt.Tx) error { return tx.Bucket(MetaBucket).Put([]byte(key), []byte(key)) }
}

func hasKey(t *testing.T, db *DB, key string) bool {
	t.Helper()
	var ok bool
	if err := db.View(func(tx *bolt.Tx) error { ok = tx.Bucket(MetaBucket).Get([]byte(key)) != nil; return nil }); err != nil {
		t.Fatal(err)
	}
	return ok
}

// TestUpdateCommitsOnCallersGoroutine: with no commit in flight, a write
// commits on its caller's goroutine, not through another goroutine that
// the caller would wait for.
func TestUpdateCommitsOnCallersGoroutine(t *testing.T) {
	db := openDB(t, filepath.Join(t.TempDir(), "cache.db"), Options{})
	var stack string
	err := db.Update(&Write{Fn: func(tx *bolt.Tx) error {
		buf := make([]byte, 64<<10)
		stack = string(buf[:runtime.Stack(buf, false)])
		return putKey("a")(tx)
	}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stack, "cachefile.TestUpdateCommitsOnCallersGoroutine(") {
		t.Fatalf("the write ran on another goroutine:\n%s", stack)
	}
	if !hasKey(t, db, "a") {
		t.Fatal("the write did not commit")
	}
}

// TestUpdateMergesConcurrentWrites: writes queued by several goroutines
// while a commit is in flight share the next transaction.
func TestUpdateMergesConcurrentWrites(t *testing.T) {
	db := openDB(t, filepath.Join(t.TempDir(), "cache.db"), Options{})
	release, held := startHeldWrite(t, db)
	const writers = 5
	txs := make([]int, writers)
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			errs[i] = db.Update(&Write{Fn: func(tx *bolt.Tx) error {
				txs[i] = tx.ID()
				return putKey(fmt.Sprint(i))(tx)
			}})
		})
	}
	waitUpdatesQueued(t, writers)
	release()
	wg.Wait()
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		if !hasKey(t, db, fmt.Sprint(i)) {
			t.Fatalf("write %d did not commit", i)
		}
	}
	if !slices.Equal(slices.Compact(slices.Clone(txs)), txs[:1]) {
		t.Fatalf("the queued writes ran in transactions %v, want one", txs)
	}
}

// TestUpdateRetriesFailedMergedWriteAlone: a write that fails a merged
// transaction fails alone, the others of that transaction are committed
// by a retry, and every write's hooks hear of each attempt.
func TestUpdateRetriesFailedMergedWriteAlone(t *testing.T) {
	db := openDB(t, filepath.Join(t.TempDir(), "cache.db"), Options{})
	errBad := errors.New("bad write")
	release, held := startHeldWrite(t, db)
	type hooks struct {
		before int
		after  []bool
	}
	names := []string{"good1", "bad", "good2"}
	seen := make([]hooks, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		fn := putKey(name)
		if name == "bad" {
			fn = func(*bolt.Tx) error { return errBad }
		}
		wg.Go(func() {
			errs[i] = db.Update(&Write{
				Fn:           fn,
				BeforeCommit: func() { seen[i].before++ },
				AfterCommit:  func(committed bool) { seen[i].after = append(seen[i].after, committed) },
			})
		})
		waitUpdatesQueued(t, i+1)
	}
	release()
	wg.Wait()
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	for i, name := range names {
		want := hooks{before: 2, after: []bool{false, name != "bad"}}
		if seen[i].before != want.before || !slices.Equal(seen[i].after, want.after) {
			t.Errorf("%s: hooks ran %+v, want %+v", name, seen[i], want)
		}
		switch {
		case name == "bad" && !errors.Is(errs[i], errBad):
			t.Errorf("bad write: got %v, want %v", errs[i], errBad)
		case name != "bad" && (errs[i] != nil || !hasKey(t, db, name)):
			t.Errorf("%s: error %v, committed %v; want it committed", name, errs[i], hasKey(t, db, name))
		}
	}
}

// TestCloseAnswersQueuedWritesAndRefusesLater: Close during a commit
// waits for it and for the writes queued behind it, which commit; a
// write submitted after Close started gets ErrClosed. TestMain's goleak
// checks that nothing is left running.
func TestCloseAnswersQueuedWritesAndRefusesLater(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	db := openDB(t, path, Options{})
	release, held := startHeldWrite(t, db)
	queued := make(chan error, 1)
	go func() { queued <- db.Update(&Write{Fn: putKey("queued")}) }()
	waitUpdatesQueued(t, 1)
	closed := make(chan error, 1)
	go func() { closed <- db.Close() }()
	testutil.Eventually(t, "Close waiting for the commit", 10*time.Second, func() bool {
		return testutil.GoroutineIn("cachefile.(*DB).Close(", "sync.(*Cond).Wait(") ||
			testutil.GoroutineIn("cachefile.(*DB).Close(", "runtime.chanrecv")
	})
	if err := db.Update(&Write{Fn: putKey("late")}); !errors.Is(err, ErrClosed) {
		t.Fatalf("a write after Close started: got %v, want %v", err, ErrClosed)
	}
	if err := db.MakeDurable(); err != nil {
		t.Fatalf("MakeDurable of a durable file: %v", err)
	}
	release()
	if err := <-held; err != nil {
		t.Fatalf("the write in flight: %v", err)
	}
	if err := <-queued; err != nil {
		t.Fatalf("the write queued before Close: %v", err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	db = openDB(t, path, Options{})
	if !hasKey(t, db, "queued") || hasKey(t, db, "late") {
		t.Fatalf("after reopening: queued write kept %v, late write kept %v; want true, false", hasKey(t, db, "queued"), hasKey(t, db, "late"))
	}
}

// TestCommitHookPanicPassesTheLoopOn: a commit hook that panics on the
// goroutine running the commit loop unwinds that caller only. The other
// writes of its transaction get an error and commit nothing, the loop
// passes on, and later writes commit.
func TestCommitHookPanicPassesTheLoopOn(t *testing.T) {
	db := openDB(t, filepath.Join(t.TempDir(), "cache.db"), Options{})
	release, held := startHeldWrite(t, db)
	panicked := make(chan any, 1)
	go func() {
		defer func() { panicked <- recover() }()
		_ = db.Update(&Write{Fn: putKey("panics"), BeforeCommit: func() { panic("hook failed") }})
	}()
	waitUpdatesQueued(t, 1)
	other := make(chan error, 1)
	go func() { other <- db.Update(&Write{Fn: putKey("other")}) }()
	waitUpdatesQueued(t, 2)
	release()
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	if r := <-panicked; r != "hook failed" {
		t.Fatalf("the panicking hook's caller recovered %v, want its panic", r)
	}
	if err := <-other; err == nil || !strings.Contains(err.Error(), "panicked") {
		t.Fatalf("the other write of the transaction: got %v, want an error naming the panic", err)
	}
	if err := db.Update(&Write{Fn: putKey("later")}); err != nil {
		t.Fatalf("a write after the panic: %v", err)
	}
	if hasKey(t, db, "panics") || hasKey(t, db, "other") || !hasKey(t, db, "later") {
		t.Fatalf("committed: panicking write %v, other %v, later %v; want false, false, true",
			hasKey(t, db, "panics"), hasKey(t, db, "other"), hasKey(t, db, "later"))
	}
}
