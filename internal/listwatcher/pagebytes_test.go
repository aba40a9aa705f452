package listwatcher_test

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/boltinformer/boltinformer/internal/listwatcher"
	"github.com/boltinformer/boltinformer/internal/testutil"
	"github.com/boltinformer/boltinformer/reflector"
)

// bigPod is a Pod of about 1 KB on the wire.
func bigPod(name string) *corev1.Pod {
	p := testutil.Pod("ns", name, "1")
	p.Annotations = map[string]string{"pad": strings.Repeat("x", 1000)}
	return p
}

// bigPage is page() with bigPods.
func bigPage(rv, cont string, names ...string) *corev1.PodList {
	l := page(rv, cont)
	for _, n := range names {
		l.Items = append(l.Items, *bigPod(n))
	}
	return l
}

// threeBigPods is a PageBytes that holds three bigPods, not four.
func threeBigPods() int64 { return int64(bigPod("a").Size())*3 + 100 }

func TestPageBytesShrinksListPages(t *testing.T) {
	h := start(t, listwatcher.Options{PageSize: 10, PageBytes: threeBigPods()})
	// Nothing is known of the objects before the first page: it asks for
	// PageSize, and is split into pages of three from its first object on.
	h.nextList(10, "").RespondList(bigPage("10", "c1", "a", "b", "c", "d", "e", "f", "g"))
	// The next request asks for what fits.
	h.nextList(3, "c1").RespondList(bigPage("10", "", "h", "i", "j"))
	h.nextWatch("10")
	expectCalls(t, h.sink, "BeginRelist",
		"AddListPage(a@1,b@1,c@1)", "WaitBelow(3)", "AddListPage(d@1,e@1,f@1)", "WaitBelow(3)", "AddListPage(g@1)",
		"WaitBelow(3)", "AddListPage(h@1,i@1,j@1)", "EndRelist(10)")
	h.stop()
	if m := h.metrics.snapshot(); !slices.Equal(m.pages, []int{3, 3, 1, 3}) {
		t.Errorf("metrics %v, want pages 3 3 1 3", m)
	}
}

func TestPageBytesShrinksWatchListPages(t *testing.T) {
	h := start(t, listwatcher.Options{WatchList: reflector.WatchListOn, PageSize: 10, PageBytes: threeBigPods()})
	req := h.lw.Next(t)
	expectWatchList(t, req)
	w := req.RespondWatch()
	for _, n := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		w.Add(bigPod(n))
	}
	w.Bookmark(initialEventsEnd("20"))
	expectCalls(t, h.sink, "BeginRelist",
		"AddListPage(a@1,b@1,c@1)", "WaitBelow(3)", "AddListPage(d@1,e@1,f@1)", "WaitBelow(3)", "AddListPage(g@1)", "EndRelist(20)")
	h.stop()
}

func TestPageBytesKeepsPageSizeForSmallObjects(t *testing.T) {
	// testutil.Pod is about 100 bytes: the default PageBytes holds far more
	// than PageSize of them.
	h := start(t, listwatcher.Options{PageSize: 2})
	h.nextList(2, "").RespondList(page("10", "c1", "a", "b"))
	h.nextList(2, "c1").RespondList(page("10", "", "c"))
	h.nextWatch("10")
	expectCalls(t, h.sink, "BeginRelist", "AddListPage(a@1,b@1)", "WaitBelow(2)", "AddListPage(c@1)", "EndRelist(10)")
}

func TestNegativePageBytesCountsObjectsOnly(t *testing.T) {
	h := start(t, listwatcher.Options{PageSize: 4, PageBytes: -1})
	h.nextList(4, "").RespondList(bigPage("10", "c1", "a", "b", "c", "d"))
	h.nextList(4, "c1").RespondList(bigPage("10", "", "e"))
	h.nextWatch("10")
	expectCalls(t, h.sink, "BeginRelist", "AddListPage(a@1,b@1,c@1,d@1)", "WaitBelow(4)", "AddListPage(e@1)", "EndRelist(10)")
}
