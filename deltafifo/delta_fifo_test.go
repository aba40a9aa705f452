package deltafifo

import (
	"slices"
	"testing"

	"k8s.io/client-go/tools/cache"
)

func newTestDeltaFIFO(known cache.KeyListerGetter) *DeltaFIFO {
	return NewDeltaFIFO(DeltaFIFOOptions{KeyFunction: testKeyFunc, KnownObjects: known, EmitDeltaTypeReplaced: true})
}

func TestDeltaFIFODeduplicatesDeletions(t *testing.T) {
	real1, real2 := obj("a", 1), obj("a", 2)
	tomb := cache.DeletedFinalStateUnknown{Key: "ns/a", Obj: obj("a", 0)}
	tests := []struct {
		name    string
		deletes []interface{}
		want    cache.Deltas
	}{
		{"two deletions keep the first", []interface{}{real1, real2},
			cache.Deltas{{Type: cache.Deleted, Object: real1}}},
		{"a deletion replaces a tombstone", []interface{}{tomb, real2},
			cache.Deltas{{Type: cache.Deleted, Object: real2}}},
		{"a tombstone does not replace a deletion", []interface{}{real1, tomb},
			cache.Deltas{{Type: cache.Deleted, Object: real1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			known := newKnownStore()
			known.objs["ns/a"] = obj("a", 0)
			f := newTestDeltaFIFO(known)
			for _, d := range tt.deletes {
				must(t, f.Delete(d))
			}
			got, _, _ := f.GetByKey("ns/a")
			if !deltasEqual(got.(cache.Deltas), tt.want) {
				t.Errorf("accumulator %+v, want %+v", got, tt.want)
			}
		})
	}

	t.Run("only consecutive deletions", func(t *testing.T) {
		f := newTestDeltaFIFO(nil)
		must(t, f.Add(real1))
		must(t, f.Delete(real1))
		must(t, f.Update(real2))
		must(t, f.Delete(real2))
		got, _, _ := f.Get(real2)
		if len(got.(cache.Deltas)) != 4 {
			t.Errorf("accumulator %+v, want all four Deltas", got)
		}
	})
}

func TestDeltaFIFOIgnoresDeletionsOfUnknownKeys(t *testing.T) {
	for name, known := range map[string]cache.KeyListerGetter{"no KnownObjects": nil, "KnownObjects": newKnownStore()} {
		t.Run(name, func(t *testing.T) {
			f := newTestDeltaFIFO(known)
			must(t, f.Delete(obj("a", 1)))
			if keys := f.ListKeys(); len(keys) != 0 {
				t.Errorf("queued %q for the deletion of a key nobody knows", keys)
			}
			if !f.HasSynced() {
				t.Error("an ignored Delete still counts as an event before any list")
			}
		})
	}
}

func TestDeltaFIFOReadAccessors(t *testing.T) {
	f := newTestDeltaFIFO(nil)
	must(t, f.Add(obj("b", 1)))
	must(t, f.Add(obj("a", 2)))
	must(t, f.Update(obj("b", 3)))

	if got, want := f.ListKeys(), []string{"ns/b", "ns/a"}; !slices.Equal(got, want) {
		t.Errorf("ListKeys() = %q, want %q", got, want)
	}
	list := f.List()
	if len(list) != 2 || !slices.Contains(list, interface{}(obj("b", 3))) || !slices.Contains(list, interface{}(obj("a", 2))) {
		t.Errorf("List() = %+v, want the newest object of each key", list)
	}

	got, exists, err := f.Get(obj("b", 0))
	if err != nil || !exists || len(got.(cache.Deltas)) != 2 {
		t.Fatalf("Get(b) = %+v, %v, %v; want its two Deltas", got, exists, err)
	}
	got.(cache.Deltas)[0] = cache.Delta{Type: cache.Sync, Object: "clobbered"}
	again, _, _ := f.GetByKey("ns/b")
	if again.(cache.Deltas)[0].Type != cache.Added {
		t.Error("changing what GetByKey returned changed the queue: it must return a copy")
	}
	if _, exists, err := f.GetByKey("ns/none"); exists || err != nil {
		t.Errorf("GetByKey(missing) = %v, %v; want false, nil", exists, err)
	}
}

func TestDeltaFIFOPopAndClose(t *testing.T) {
	f := newTestDeltaFIFO(nil)
	popped := make(chan cache.Deltas, 1)
	done := make(chan error, 1)
	go func() {
		_, err := f.Pop(func(obj interface{}, _ bool) error {
			popped <- obj.(cache.Deltas)
			return nil
		})
		done <- err
	}()
	expectBlocked(t, done, "Pop on an empty DeltaFIFO")
	must(t, f.Add(obj("a", 1)))
	must(t, expectReturns(t, done, "Pop after Add"))
	if d := <-popped; !deltasEqual(d, cache.Deltas{{Type: cache.Added, Object: obj("a", 1)}}) {
		t.Errorf("popped %+v", d)
	}

	must(t, f.Add(obj("b", 2)))
	f.Close()
	if !f.IsClosed() {
		t.Fatal("IsClosed() = false after Close")
	}
	if _, err := f.Pop(func(interface{}, bool) error { return nil }); err != nil {
		t.Fatalf("Pop of a closed queue holding a key = %v, want the key", err)
	}
	go func() {
		_, err := f.Pop(func(interface{}, bool) error { return nil })
		done <- err
	}()
	if err := expectReturns(t, done, "Pop on a closed, empty DeltaFIFO"); err != ErrClosed {
		t.Errorf("Pop on a closed, empty DeltaFIFO = %v, want ErrClosed", err)
	}
}
