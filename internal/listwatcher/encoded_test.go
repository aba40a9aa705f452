package listwatcher_test

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/watch"

	"github.com/boltinformer/boltinformer/internal/listwatcher"
	rt "github.com/boltinformer/boltinformer/internal/listwatcher/listwatchertest"
	"github.com/boltinformer/boltinformer/internal/testutil"
	"github.com/boltinformer/boltinformer/reflector"
)

// expectEncodings checks the encodings the sink received with each call,
// rendered as strings ("-" for none, "nil" for a call without any).
func expectEncodings(t *testing.T, s *rt.Sink, want ...string) {
	t.Helper()
	var got []string
	for _, c := range s.Calls() {
		if c.Encoded == nil {
			got = append(got, "nil")
			continue
		}
		var each []string
		for _, b := range c.Encoded {
			if b == nil {
				each = append(each, "-")
			} else {
				each = append(each, string(b))
			}
		}
		got = append(got, fmt.Sprint(each))
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("encodings handed to the sink %v, want %v", got, want)
	}
}

// A watch that carries the encodings of its objects (a ListWatch's) hands
// each ADDED and MODIFIED object's to the sink with the object; a plain
// watch hands none.
func TestWatchHandsOverEncodings(t *testing.T) {
	h := start(t, listwatcher.Options{StartRV: "100"})
	req := h.lw.Next(t)
	expectWatch(t, req, "100")
	w := req.RespondEncodedWatch()
	w.SendEncoded(watch.Event{Type: watch.Added, Object: testutil.Pod("ns", "a", "101")}, []byte("A101"))
	w.SendEncoded(watch.Event{Type: watch.Modified, Object: testutil.Pod("ns", "a", "102")}, []byte("A102"))
	w.SendEncoded(watch.Event{Type: watch.Added, Object: testutil.Pod("ns", "b", "103")}, nil)
	w.SendEncoded(watch.Event{Type: watch.Deleted, Object: testutil.Pod("ns", "b", "104")}, nil)
	w.SendEncoded(watch.Event{Type: watch.Bookmark, Object: bookmark("105")}, nil)
	w.Close()
	plain := h.nextWatch("105")
	plain.Add(testutil.Pod("ns", "c", "106"))
	plain.Modify(testutil.Pod("ns", "c", "107"))

	expectCalls(t, h.sink, "Add(a@101)", "Update(a@102)", "Add(b@103)", "Delete(b@104)", "Bookmark(105)", "Add(c@106)", "Update(c@107)")
	expectEncodings(t, h.sink, "[A101]", "[A102]", "[-]", "nil", "nil", "[-]", "[-]")
}

// A WatchList relist hands each page's encodings to AddListPage beside its
// objects, one per object; the watch that goes on after the initial events
// hands over its events' as any watch does.
func TestWatchListHandsOverEncodings(t *testing.T) {
	h := start(t, listwatcher.Options{WatchList: reflector.WatchListOn, PageSize: 2})
	req := h.lw.Next(t)
	expectWatchList(t, req)
	w := req.RespondEncodedWatch()
	w.SendEncoded(watch.Event{Type: watch.Added, Object: testutil.Pod("ns", "a", "5")}, []byte("A5"))
	w.SendEncoded(watch.Event{Type: watch.Added, Object: testutil.Pod("ns", "b", "3")}, nil)
	w.SendEncoded(watch.Event{Type: watch.Added, Object: testutil.Pod("ns", "c", "9")}, []byte("C9"))
	w.SendEncoded(watch.Event{Type: watch.Bookmark, Object: initialEventsEnd("20")}, nil)
	w.SendEncoded(watch.Event{Type: watch.Modified, Object: testutil.Pod("ns", "a", "21")}, []byte("A21"))

	expectCalls(t, h.sink, "BeginRelist", "AddListPage(a@5,b@3)", "WaitBelow(2)", "AddListPage(c@9)", "EndRelist(20)", "Update(a@21)")
	expectEncodings(t, h.sink, "nil", "[A5 -]", "nil", "[C9]", "nil", "[A21]")
}
