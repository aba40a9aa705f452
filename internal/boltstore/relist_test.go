package boltstore_test

import (
	"errors"
	"fmt"
	"sort"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/boltstore/boltstoretest"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

func TestPagedRelist(t *testing.T) {
	s := boltstoretest.Open(t, "pods", podOpts())
	if err := s.Replace([]interface{}{
		testutil.Pod("a", "keep", "5", testutil.Label("app", "keep"), testutil.Node("n1")), testutil.Pod("a", "change", "6", testutil.Label("app", "change"), testutil.Node("n1")), testutil.Pod("a", "gone", "7", testutil.Label("app", "gone"), testutil.Node("n1")), testutil.Pod("b", "gone2", "8", testutil.Label("app", "gone2"), testutil.Node("n2")),
	}, "8"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ApplyListPage(upserts(testutil.Pod("a", "x", "1", testutil.Label("app", "x"), testutil.Node("")))); !errors.Is(err, boltstore.ErrNoRelist) {
		t.Fatalf("page without BeginRelist: %v", err)
	}
	if err := s.BeginRelist("410 Gone"); err != nil {
		t.Fatal(err)
	}
	if in, reason, _ := s.RelistInProgress(); !in || reason != "410 Gone" {
		t.Fatalf("relist marker %v %q", in, reason)
	}
	// Watch events during a relist must not move the RV (invariant 3).
	if _, err := s.Apply(nil, "100"); err != nil {
		t.Fatal(err)
	}
	page1, err := s.ApplyListPage(upserts(testutil.Pod("a", "change", "20", testutil.Label("app", "change"), testutil.Node("n3")), testutil.Pod("a", "keep", "5", testutil.Label("app", "keep"), testutil.Node("n1"))))
	if err != nil {
		t.Fatal(err)
	}
	page2, err := s.ApplyListPage(upserts(testutil.Pod("c", "new", "21", testutil.Label("app", "new"), testutil.Node("n1"))))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := changeTypes(append(page1, page2...)), "a/change:Updated a/keep:Unchanged c/new:Added "; got != want {
		t.Fatalf("page changes %q, want %q", got, want)
	}
	if rv := s.LastStoreSyncResourceVersion(); rv != "8" {
		t.Fatalf("RV moved during relist: %q", rv)
	}
	dels, err := s.FinishRelist("30")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := changeTypes(dels), "a/gone:Deleted b/gone2:Deleted "; got != want {
		t.Fatalf("deletes %q, want %q", got, want)
	}
	if dels[0].Old.(*v1.Pod).Name != "gone" {
		t.Fatalf("deleted object not decoded: %v", dels[0].Old)
	}
	if rv := s.LastStoreSyncResourceVersion(); rv != "30" {
		t.Fatalf("rv %q, want 30", rv)
	}
	if in, _, _ := s.RelistInProgress(); in {
		t.Fatal("relist marker left behind")
	}
	keys := s.ListKeys()
	sort.Strings(keys)
	if fmt.Sprint(keys) != "[a/change a/keep c/new]" {
		t.Fatalf("keys after relist %v", keys)
	}
	if vals, _ := s.IndexKeys("node", "n2"); len(vals) != 0 {
		t.Fatalf("index entries of deleted objects remain: %v", vals)
	}
}

func TestRestartedRelistForgetsSeenKeys(t *testing.T) {
	s := boltstoretest.Open(t, "pods", podOpts())
	if err := s.Replace([]interface{}{testutil.Pod("a", "p1", "5", testutil.Label("app", "p1"), testutil.Node("")), testutil.Pod("a", "p2", "6", testutil.Label("app", "p2"), testutil.Node(""))}, "6"); err != nil {
		t.Fatal(err)
	}
	if err := s.BeginRelist("first"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ApplyListPage(upserts(testutil.Pod("a", "p1", "5", testutil.Label("app", "p1"), testutil.Node("")), testutil.Pod("a", "p2", "6", testutil.Label("app", "p2"), testutil.Node("")))); err != nil {
		t.Fatal(err)
	}
	// The continue token expired: the list restarts and p2 is gone by now.
	if err := s.BeginRelist("restart"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ApplyListPage(upserts(testutil.Pod("a", "p1", "5", testutil.Label("app", "p1"), testutil.Node("")))); err != nil {
		t.Fatal(err)
	}
	dels, err := s.FinishRelist("9")
	if err != nil {
		t.Fatal(err)
	}
	if got := changeTypes(dels); got != "a/p2:Deleted " {
		t.Fatalf("deletes %q", got)
	}
}
