package deltafifo

import (
	"errors"
	"slices"
	"testing"
	"time"

	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer/internal/testutil"
)

// blockedFor is how long a call must stay blocked to count as blocked. A
// wrong implementation returns at once, so a short wait cannot make a
// correct one fail.
const blockedFor = 50 * time.Millisecond

// returnsWithin is how long a call that should return may take.
const returnsWithin = 10 * time.Second

func expectBlocked(t *testing.T, done <-chan error, what string) {
	t.Helper()
	select {
	case err := <-done:
		t.Fatalf("%s returned %v, want it blocked", what, err)
	case <-time.After(blockedFor):
	}
}

func expectReturns(t *testing.T, done <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(returnsWithin):
		t.Fatalf("%s still blocked after %v", what, returnsWithin)
		return nil
	}
}

func obj(key string, val int) testObj { return testObj{Key: "ns/" + key, Val: val} }

// newTestQueue is a Queue as boltinformer's informer configures it: atomic
// events with bookmarks, no KnownObjects.
func newTestQueue(t *testing.T, opts QueueOptions) *Queue {
	t.Helper()
	opts.KeyFunction = testKeyFunc
	logger := testutil.Logger(t)
	opts.Logger = &logger
	if opts.KnownObjects == nil {
		opts.AtomicEvents = true
		opts.EmitDeltaTypeBookmark = true
	}
	return NewQueue(opts)
}

// popped is one call of a processing function, for tests that check what
// PopBatch hands over and how.
type popped struct {
	single  bool
	deltas  []cache.Delta
	initial bool
}

// popAll pops with PopBatch until the queue is empty.
func popAll(t *testing.T, q *Queue) []popped {
	t.Helper()
	var out []popped
	for q.Len() > 0 {
		err := q.PopBatch(
			func(deltas []cache.Delta, initial bool) error {
				out = append(out, popped{deltas: deltas, initial: initial})
				return nil
			},
			func(obj interface{}, initial bool) error {
				out = append(out, popped{single: true, deltas: obj.(cache.Deltas), initial: initial})
				return nil
			})
		if err != nil {
			t.Fatalf("PopBatch: %v", err)
		}
	}
	return out
}

func TestRelistMarkersKeepTheirPlace(t *testing.T) {
	for _, known := range []bool{false, true} {
		name := "atomic"
		var opts QueueOptions
		if known {
			name, opts.KnownObjects = "known", newKnownStore()
		}
		t.Run(name, func(t *testing.T) {
			q := newTestQueue(t, opts)
			must(t, q.Add(obj("a", 1)))
			must(t, q.BeginRelist("test"))
			must(t, q.AddListPage([]interface{}{obj("b", 2), obj("c", 3)}, nil))
			must(t, q.Update(obj("a", 4)))
			must(t, q.AddListPage([]interface{}{obj("a", 5)}, nil))
			must(t, q.EndRelist("42"))
			must(t, q.Delete(obj("b", 6)))
			if got := q.Len(); got != 8 {
				t.Fatalf("Len() = %d, want 8", got)
			}

			want := []popped{
				{single: true, deltas: []cache.Delta{{Type: cache.Added, Object: obj("a", 1)}}},
				{single: true, deltas: []cache.Delta{{Type: ListStart, Object: ListStartInfo{Reason: "test"}}}},
				{deltas: []cache.Delta{ // a batch ends before a key it holds
					{Type: cache.Replaced, Object: obj("b", 2)},
					{Type: cache.Replaced, Object: obj("c", 3)},
					{Type: cache.Updated, Object: obj("a", 4)},
				}},
				{single: true, deltas: []cache.Delta{{Type: cache.Replaced, Object: obj("a", 5)}}},
				{single: true, deltas: []cache.Delta{{Type: ListComplete, Object: ListCompleteInfo{ResourceVersion: "42"}}}},
				{single: true, deltas: []cache.Delta{{Type: cache.Deleted, Object: obj("b", 6)}}},
			}
			expectPopped(t, popAll(t, q), want)
		})
	}
}

func expectPopped(t *testing.T, got, want []popped) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("popped %d times, want %d:\ngot:  %+v\nwant: %+v", len(got), len(want), got, want)
	}
	for i := range want {
		if got[i].single != want[i].single || got[i].initial != want[i].initial || !deltasEqual(got[i].deltas, want[i].deltas) {
			t.Errorf("pop %d:\ngot:  %+v\nwant: %+v", i, got[i], want[i])
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestMarkersEndBatchesButNeverJoinThem(t *testing.T) {
	q := newTestQueue(t, QueueOptions{})
	must(t, q.BeginRelist("test"))
	must(t, q.AddListPage([]interface{}{obj("a", 1), obj("b", 2)}, nil))
	must(t, q.EndRelist("7"))
	must(t, q.BeginRelist("test"))
	must(t, q.EndRelist("8"))

	want := []popped{
		{single: true, initial: true, deltas: []cache.Delta{{Type: ListStart, Object: ListStartInfo{Reason: "test"}}}},
		{initial: true, deltas: []cache.Delta{
			{Type: cache.Replaced, Object: obj("a", 1)},
			{Type: cache.Replaced, Object: obj("b", 2)},
		}},
		{single: true, initial: true, deltas: []cache.Delta{{Type: ListComplete, Object: ListCompleteInfo{ResourceVersion: "7"}}}},
		{single: true, deltas: []cache.Delta{{Type: ListStart, Object: ListStartInfo{Reason: "test"}}}},
		{single: true, deltas: []cache.Delta{{Type: ListComplete, Object: ListCompleteInfo{ResourceVersion: "8"}}}},
	}
	expectPopped(t, popAll(t, q), want)
}

func TestPagedRelistSyncsWhenListCompleteIsProcessed(t *testing.T) {
	// Unlocked while processing, so the process function can ask HasSynced.
	q := newTestQueue(t, QueueOptions{UnlockWhileProcessing: true})
	must(t, q.BeginRelist("test"))
	must(t, q.AddListPage([]interface{}{obj("a", 1)}, nil))

	// Pages popped before the list ends belong to the initial list.
	popOne := func(wantSynced bool) {
		t.Helper()
		_, err := q.Pop(func(obj interface{}, initial bool) error {
			if !initial {
				t.Errorf("Pop of %v: isInInitialList = false, want true", obj)
			}
			if q.HasSynced() {
				t.Errorf("HasSynced() = true while processing %v", obj)
			}
			return nil
		})
		must(t, err)
		if got := q.HasSynced(); got != wantSynced {
			t.Fatalf("HasSynced() = %v after a Pop, want %v", got, wantSynced)
		}
	}
	popOne(false) // ListStart
	popOne(false) // a
	must(t, q.AddListPage([]interface{}{obj("b", 2)}, nil))
	must(t, q.EndRelist("9"))
	if q.HasSynced() || cache.IsDone(q.HasSyncedChecker()) {
		t.Fatal("synced before the end of the list was processed")
	}
	popOne(false) // b
	popOne(true)  // ListComplete
	if !cache.IsDone(q.HasSyncedChecker()) {
		t.Fatal("HasSyncedChecker not done after HasSynced turned true")
	}

	// Later relists do not unsync.
	must(t, q.BeginRelist("test"))
	must(t, q.EndRelist("10"))
	if !q.HasSynced() {
		t.Fatal("a second relist unsynced the queue")
	}
}

func TestEventBeforeFirstRelistEndSyncs(t *testing.T) {
	q := newTestQueue(t, QueueOptions{})
	must(t, q.BeginRelist("test"))
	must(t, q.AddListPage([]interface{}{obj("a", 1)}, nil))
	if q.HasSynced() {
		t.Fatal("synced by BeginRelist and AddListPage alone")
	}
	// As with Replace: an event before the first list ends means the first
	// list is empty.
	must(t, q.Add(obj("b", 2)))
	if !q.HasSynced() {
		t.Fatal("not synced after an event before the first list ended")
	}
}

func TestRelistCallsOutOfOrder(t *testing.T) {
	q := newTestQueue(t, QueueOptions{})
	if err := q.AddListPage([]interface{}{obj("a", 1)}, nil); !errors.Is(err, ErrNoRelist) {
		t.Errorf("AddListPage before BeginRelist = %v, want ErrNoRelist", err)
	}
	if err := q.EndRelist("1"); !errors.Is(err, ErrNoRelist) {
		t.Errorf("EndRelist before BeginRelist = %v, want ErrNoRelist", err)
	}
	must(t, q.BeginRelist("test"))
	must(t, q.EndRelist("2"))
	if err := q.AddListPage(nil, nil); !errors.Is(err, ErrNoRelist) {
		t.Errorf("AddListPage after EndRelist = %v, want ErrNoRelist", err)
	}
	if got := q.Len(); got != 2 {
		t.Errorf("Len() = %d, want 2: only the two markers", got)
	}
}

func TestAddListPageIsAllOrNothing(t *testing.T) {
	q := newTestQueue(t, QueueOptions{Transformer: testTransform})
	must(t, q.BeginRelist("test"))

	var keyErr cache.KeyError
	if err := q.AddListPage([]interface{}{obj("a", 1), testObj{Val: 2}}, nil); !errors.As(err, &keyErr) || !errors.Is(err, errNoKey) {
		t.Errorf("AddListPage with a keyless object = %v, want a cache.KeyError wrapping errNoKey", err)
	}
	if err := q.AddListPage([]interface{}{obj("a", 1), obj("b", -1)}, nil); !errors.Is(err, errTransform) {
		t.Errorf("AddListPage with an object the transformer refuses = %v, want errTransform", err)
	}
	if got := q.Len(); got != 1 {
		t.Fatalf("Len() = %d after failed pages, want 1 (ListStart)", got)
	}

	must(t, q.AddListPage([]interface{}{obj("a", 1)}, nil))
	// No list has ended yet: what is popped belongs to the initial list.
	want := []popped{
		{single: true, initial: true, deltas: []cache.Delta{{Type: ListStart, Object: ListStartInfo{Reason: "test"}}}},
		{single: true, initial: true, deltas: []cache.Delta{{Type: cache.Replaced, Object: testObj{Key: "ns/a", Val: 1, Transformed: 1}}}},
	}
	expectPopped(t, popAll(t, q), want)
}

func TestReplaceAndResyncSkipQueuedMarkers(t *testing.T) {
	known := newKnownStore()
	known.objs["ns/k"] = obj("k", 1)
	q := newTestQueue(t, QueueOptions{KnownObjects: known})
	must(t, q.BeginRelist("test"))
	must(t, q.AddListPage([]interface{}{obj("a", 2)}, nil))
	must(t, q.EndRelist("3"))
	must(t, q.Resync())
	must(t, q.Replace([]interface{}{obj("a", 4)}, "5"))

	want := []cache.Delta{
		{Type: ListStart, Object: ListStartInfo{Reason: "test"}},
		{Type: cache.Replaced, Object: obj("a", 2)},
		{Type: ListComplete, Object: ListCompleteInfo{ResourceVersion: "3"}},
		{Type: cache.Sync, Object: obj("k", 1)},
		{Type: cache.Deleted, Object: cache.DeletedFinalStateUnknown{Key: "ns/k", Obj: obj("k", 1)}},
		{Type: cache.Replaced, Object: obj("a", 4)},
	}
	if got := q.items; !deltasEqual(got, want) {
		t.Fatalf("queued:\ngot:  %+v\nwant: %+v", got, want)
	}
}

func TestCloseUnblocksConsumers(t *testing.T) {
	q := newTestQueue(t, QueueOptions{})
	popDone := make(chan error, 1)
	batchDone := make(chan error, 1)
	process := func(interface{}, bool) error {
		t.Error("processed something from an empty queue")
		return nil
	}
	go func() {
		_, err := q.Pop(process)
		popDone <- err
	}()
	go func() {
		batchDone <- q.PopBatch(func([]cache.Delta, bool) error { return process(nil, false) }, process)
	}()
	expectBlocked(t, popDone, "Pop on an empty queue")
	expectBlocked(t, batchDone, "PopBatch on an empty queue")
	q.Close()
	if err := expectReturns(t, popDone, "Pop after Close"); err != ErrClosed {
		t.Errorf("Pop after Close = %v, want ErrClosed", err)
	}
	if err := expectReturns(t, batchDone, "PopBatch after Close"); err != ErrClosed {
		t.Errorf("PopBatch after Close = %v, want ErrClosed", err)
	}
}

func TestClosedQueueDrainsAndRefusesRelists(t *testing.T) {
	q := newTestQueue(t, QueueOptions{})
	must(t, q.BeginRelist("test"))
	q.Close()
	if !q.IsClosed() {
		t.Fatal("IsClosed() = false after Close")
	}
	for name, err := range map[string]error{
		"BeginRelist": q.BeginRelist("test"),
		"AddListPage": q.AddListPage([]interface{}{obj("a", 1)}, nil),
		"EndRelist":   q.EndRelist("1"),
	} {
		if err != ErrClosed {
			t.Errorf("%s on a closed queue = %v, want ErrClosed", name, err)
		}
	}
	// Like client-go, a closed queue still takes events and hands out what
	// it holds before it reports ErrClosed.
	must(t, q.Add(obj("b", 2)))
	var got []cache.DeltaType
	for {
		_, err := q.Pop(func(obj interface{}, _ bool) error {
			got = append(got, obj.(cache.Deltas)[0].Type)
			return nil
		})
		if err == ErrClosed {
			break
		}
		must(t, err)
	}
	if want := []cache.DeltaType{ListStart, cache.Added}; !slices.Equal(got, want) {
		t.Errorf("drained %v, want %v", got, want)
	}
}
