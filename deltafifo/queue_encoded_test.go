package deltafifo

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"k8s.io/client-go/tools/cache"
)

// popItems pops one batch with PopItems and returns what process got.
func popItems(t *testing.T, q *Queue) []Item {
	t.Helper()
	var got []Item
	must(t, q.PopItems(func(items []Item, _ bool) error {
		got = items
		return nil
	}))
	return got
}

// describeItems renders items as Type(key:encoding), the encoding "-" when
// absent.
func describeItems(items []Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		enc := "-"
		if it.Encoded != nil {
			enc = string(it.Encoded)
		}
		key := ""
		if o, ok := it.Object.(testObj); ok {
			key = o.Key
		}
		out[i] = fmt.Sprintf("%s(%s:%s)", it.Type, key, enc)
	}
	return out
}

func expectItems(t *testing.T, got []Item, want ...string) {
	t.Helper()
	if g := describeItems(got); fmt.Sprint(g) != fmt.Sprint(want) {
		t.Fatalf("popped %v, want %v", g, want)
	}
}

// The encodings handed to AddEncoded, UpdateEncoded and AddListPage come
// out of PopItems with their Deltas, in the same batches as PopBatch's;
// Deltas queued without one (Add, Delete, markers, a page without
// encodings) have none. PopBatch and Pop hand over the Deltas alone.
func TestPopItemsHandsOverEncodings(t *testing.T) {
	q := newTestQueue(t, QueueOptions{})
	must(t, q.BeginRelist("test"))
	must(t, q.AddListPage([]interface{}{obj("a", 1), obj("b", 1)}, [][]byte{[]byte("A1"), nil}))
	must(t, q.AddListPage([]interface{}{obj("c", 1)}, nil))
	must(t, q.EndRelist("10"))
	must(t, q.AddEncoded(obj("d", 2), []byte("D2")))
	must(t, q.UpdateEncoded(obj("a", 3), []byte("A3")))
	must(t, q.Add(obj("e", 4)))
	must(t, q.Delete(obj("b", 5)))
	must(t, q.AddEncoded(obj("f", 6), nil))

	expectItems(t, popItems(t, q), "ListStart(:-)")
	expectItems(t, popItems(t, q), "Replaced(ns/a:A1)", "Replaced(ns/b:-)", "Replaced(ns/c:-)")
	expectItems(t, popItems(t, q), "ListComplete(:-)")
	expectItems(t, popItems(t, q), "Added(ns/d:D2)", "Updated(ns/a:A3)", "Added(ns/e:-)", "Deleted(ns/b:-)", "Added(ns/f:-)")
	if q.encodedBytes != 0 {
		t.Errorf("the queue counts %d bytes of encodings once all were popped and processed, want 0", q.encodedBytes)
	}

	// PopBatch and Pop give client-go's Deltas, and release the encodings.
	must(t, q.AddEncoded(obj("g", 7), []byte("G7")))
	must(t, q.UpdateEncoded(obj("h", 8), []byte("H8")))
	must(t, q.PopBatch(func(deltas []cache.Delta, _ bool) error {
		if want := []cache.Delta{{Type: cache.Added, Object: obj("g", 7)}, {Type: cache.Updated, Object: obj("h", 8)}}; !deltasEqual(deltas, want) {
			t.Errorf("PopBatch handed over %v, want %v", deltas, want)
		}
		return nil
	}, func(interface{}, bool) error {
		t.Error("PopBatch handed over a single Delta, want a batch")
		return nil
	}))
	must(t, q.AddEncoded(obj("i", 9), []byte("I9")))
	if _, err := q.Pop(func(got interface{}, _ bool) error {
		if want := (cache.Deltas{{Type: cache.Added, Object: obj("i", 9)}}); !deltasEqual(got.(cache.Deltas), want) {
			t.Errorf("Pop handed over %v, want %v", got, want)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if q.encodedBytes != 0 {
		t.Errorf("the queue counts %d bytes of encodings after PopBatch and Pop, want 0", q.encodedBytes)
	}
}

// A transformer may change the objects, so their encodings are dropped:
// they no longer describe what is queued.
func TestTransformerDropsEncodings(t *testing.T) {
	q := newTestQueue(t, QueueOptions{Transformer: testTransform})
	must(t, q.BeginRelist("test"))
	must(t, q.AddListPage([]interface{}{obj("a", 1)}, [][]byte{[]byte("A1")}))
	must(t, q.EndRelist("10"))
	must(t, q.AddEncoded(obj("b", 2), []byte("B2")))
	must(t, q.UpdateEncoded(obj("c", 3), []byte("C3")))

	popItems(t, q) // ListStart
	expectItems(t, popItems(t, q), "Replaced(ns/a:-)")
	popItems(t, q) // ListComplete
	expectItems(t, popItems(t, q), "Added(ns/b:-)", "Updated(ns/c:-)")
	if q.encodedBytes != 0 {
		t.Errorf("the queue counts %d bytes of encodings it dropped", q.encodedBytes)
	}
}

// The queue holds at most maxEncodedBytes of encodings, queued or in the
// batch PopItems is processing: past it, objects are queued without theirs,
// and the ones queued first keep them. Once the batch is processed, there
// is room again.
func TestEncodingsAreBounded(t *testing.T) {
	q := newTestQueue(t, QueueOptions{BatchSize: 2, UnlockWhileProcessing: true})
	quarter := bytes.Repeat([]byte("x"), maxEncodedBytes/4)
	for i := range 5 {
		must(t, q.AddEncoded(obj(fmt.Sprint(i), i), quarter))
	}
	if q.encodedBytes != maxEncodedBytes {
		t.Fatalf("the queue counts %d bytes of encodings, want %d", q.encodedBytes, maxEncodedBytes)
	}

	must(t, q.PopItems(func(items []Item, _ bool) error {
		for i, it := range items {
			if len(it.Encoded) != len(quarter) {
				t.Errorf("item %d of the first batch lost its encoding", i)
			}
		}
		// Still being processed: no room yet.
		must(t, q.AddEncoded(obj("late", 5), quarter))
		return nil
	}))
	// Processed: room for two more.
	must(t, q.AddEncoded(obj("after", 6), quarter))
	must(t, q.BeginRelist("test"))
	must(t, q.AddListPage([]interface{}{obj("p1", 7), obj("p2", 8)}, [][]byte{quarter, quarter}))

	var kept []bool
	for q.Len() > 0 {
		for _, it := range popItems(t, q) {
			if it.Type != ListStart {
				kept = append(kept, it.Encoded != nil)
			}
		}
	}
	// 2 and 3 kept theirs, 4 came with the bound reached, "late" while the
	// first batch was processed; "after" and p1 fit once it was, p2 did not.
	if want := []bool{true, true, false, false, true, true, false}; fmt.Sprint(kept) != fmt.Sprint(want) {
		t.Errorf("encodings kept %v, want %v", kept, want)
	}
	if q.encodedBytes != 0 {
		t.Errorf("the queue counts %d bytes of encodings once all were processed, want 0", q.encodedBytes)
	}
}

// A page whose encodings do not pair with its objects is refused whole.
func TestAddListPageRefusesMismatchedEncodings(t *testing.T) {
	q := newTestQueue(t, QueueOptions{})
	must(t, q.BeginRelist("test"))
	if err := q.AddListPage([]interface{}{obj("a", 1), obj("b", 2)}, [][]byte{[]byte("A1")}); !errors.Is(err, ErrPageEncodings) {
		t.Fatalf("AddListPage with one encoding for two objects = %v, want ErrPageEncodings", err)
	}
	if n := q.Len(); n != 1 {
		t.Errorf("the queue holds %d Deltas, want the ListStart alone", n)
	}
}
