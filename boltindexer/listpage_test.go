package boltindexer_test

import (
	"errors"
	"testing"

	"github.com/boltinformer/boltinformer/boltindexer"
	"github.com/boltinformer/boltinformer/boltindexer/boltindexertest"
)

// TestListPageRefusesDeletes: a list page holds upserts only; a delete in
// one is bad input, refused before anything is written.
func TestListPageRefusesDeletes(t *testing.T) {
	s := boltindexertest.Open(t, "pods", podOpts())
	if err := s.BeginRelist("test"); err != nil {
		t.Fatal(err)
	}
	page := []boltindexer.Op{{Type: boltindexer.OpUpsert, Obj: pod("a", "p", "5", "")}, {Type: boltindexer.OpDelete, Obj: pod("a", "q", "5", "")}}
	if _, err := s.ApplyListPage(page); !errors.Is(err, boltindexer.ErrNotUpsert) {
		t.Fatalf("a delete in a list page: %v, want ErrNotUpsert", err)
	}
	if n, err := s.Len(); err != nil || n != 0 {
		t.Fatalf("store holds %d objects (%v) after a refused page, want 0", n, err)
	}
}

// upserts makes a list page of objs.
func upserts(objs ...interface{}) []boltindexer.Op {
	ops := make([]boltindexer.Op, len(objs))
	for i, obj := range objs {
		ops[i] = boltindexer.Op{Type: boltindexer.OpUpsert, Obj: obj}
	}
	return ops
}
