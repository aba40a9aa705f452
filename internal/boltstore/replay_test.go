package boltstore_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"github.com/boltinformer/boltinformer/internal/cachefile"
)

// TestReplaySkipsDamagedRecordsAndDropDamagedRepairs: Replay hands every
// good object to fn and every damaged record (a flipped byte, an envelope
// that does not parse) to damaged, in key order, without stopping; an
// error from damaged stops it. DropDamaged removes those records and their
// index entries, and the store verifies clean with the right count.
func TestReplaySkipsDamagedRecordsAndDropDamagedRepairs(t *testing.T) {
	s := damagedStore(t, []string{"p", "q", "r", "s"}, "q", "s")

	var good, bad []string
	err := s.Replay(func(obj interface{}) error {
		good = append(good, obj.(interface{ GetName() string }).GetName())
		return nil
	}, func(key string, err error) error {
		if !errors.Is(err, cachefile.ErrCorruptRecord) {
			t.Errorf("damaged %s: want ErrCorruptRecord, got %v", key, err)
		}
		bad = append(bad, key)
		return nil
	})
	if err != nil || fmt.Sprint(good) != "[p r]" || fmt.Sprint(bad) != "[a/q a/s]" {
		t.Fatalf("Replay: good %v, damaged %v, err %v; want [p r], [a/q a/s], nil", good, bad, err)
	}
	stop := errors.New("stop")
	n := 0
	err = s.Replay(func(interface{}) error { n++; return nil }, func(string, error) error { return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Fatalf("an error from damaged: %d objects, err %v; want 1 and the error", n, err)
	}

	if err := s.DropDamaged(bad); err != nil {
		t.Fatal(err)
	}
	if keys, _ := s.IndexKeys("node", "n1"); fmt.Sprint(keys) != "[a/p a/r]" {
		t.Fatalf("index entries after DropDamaged: %v", keys)
	}
	if n, err := s.Len(); err != nil || n != 2 {
		t.Fatalf("Len after DropDamaged: %d %v", n, err)
	}
	if err := s.Verify(); err != nil {
		t.Fatal(err)
	}
}

// TestListDecodesInKeyOrderAndSkipsDamaged: a List large enough to decode
// on every core returns the objects in key order, reports each damaged
// record through utilruntime.HandleError, naming its key, and leaves it
// out; so does a small one, decoded on the caller's goroutine.
func TestListDecodesInKeyOrderAndSkipsDamaged(t *testing.T) {
	for _, n := range []int{3, 600} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			names := make([]string, n)
			for i := range names {
				names[i] = fmt.Sprintf("p%03d", i)
			}
			flipped, garbage := names[1], names[n-1] // flipped sorts first
			s := damagedStore(t, names, flipped, garbage)

			var mu sync.Mutex
			var handled []string
			saved := utilruntime.ErrorHandlers
			utilruntime.ErrorHandlers = []utilruntime.ErrorHandler{func(_ context.Context, err error, _ string, _ ...interface{}) {
				mu.Lock()
				defer mu.Unlock()
				handled = append(handled, err.Error())
			}}
			defer func() { utilruntime.ErrorHandlers = saved }()

			got := s.List()
			var want []string
			for _, name := range names {
				if name != flipped && name != garbage {
					want = append(want, name)
				}
			}
			var gotNames []string
			for _, obj := range got {
				gotNames = append(gotNames, obj.(metav1.Object).GetName())
			}
			if !slices.Equal(gotNames, want) {
				t.Fatalf("List returned %d objects %v...; want %d in key order", len(gotNames), gotNames[:min(len(gotNames), 5)], len(want))
			}
			slices.Sort(handled) // the workers may report in either order
			if len(handled) != 2 || !strings.Contains(handled[0], `"a/`+flipped+`"`) || !strings.Contains(handled[1], `"a/`+garbage+`"`) {
				t.Fatalf("handled errors %q; want one naming a/%s, then one naming a/%s", handled, flipped, garbage)
			}
		})
	}
}

// TestReplayAcrossChunks: a replay longer than one read transaction's chunk
// hands every good object over once, in key order, and every damaged one
// to damaged, wherever the chunk boundaries fall.
func TestReplayAcrossChunks(t *testing.T) {
	names := make([]string, 200)
	for i := range names {
		names[i] = fmt.Sprintf("p%03d", i)
	}
	s := damagedStore(t, names, names[64], names[128])
	var good, bad []string
	err := s.Replay(func(obj interface{}) error {
		good = append(good, obj.(metav1.Object).GetName())
		return nil
	}, func(key string, _ error) error {
		bad = append(bad, key)
		return nil
	})
	want := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == names[64] || n == names[128] })
	if err != nil || !slices.Equal(good, want) || fmt.Sprint(bad) != "[a/p064 a/p128]" {
		t.Fatalf("Replay: %d good (in order: %v), damaged %v, err %v; want %d, [a/p064 a/p128], nil", len(good), slices.Equal(good, want), bad, err, len(want))
	}
}

// TestReplayPipelineOrderStopAndReadError: on one core and on several,
// Replay hands the objects on in key order; an error from fn stops it at
// that object, and a chunk that cannot be read (the store was closed under
// it) ends it with that error after the objects before it. No goroutine
// is left behind.
func TestReplayPipelineOrderStopAndReadError(t *testing.T) {
	names := make([]string, 300)
	for i := range names {
		names[i] = fmt.Sprintf("p%03d", i)
	}
	for _, procs := range []int{1, 4} {
		t.Run(fmt.Sprintf("procs=%d", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			s := damagedStore(t, names, names[10], names[20])
			want := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == names[10] || n == names[20] })
			running := goleak.IgnoreCurrent() // the store's own goroutines

			var got []string
			stop := errors.New("stop")
			err := s.Replay(func(obj interface{}) error {
				got = append(got, obj.(metav1.Object).GetName())
				if len(got) == 150 {
					return stop
				}
				return nil
			}, func(string, error) error { return nil })
			if !errors.Is(err, stop) || !slices.Equal(got, want[:150]) {
				t.Fatalf("Replay stopped by fn: %d objects (in order: %v), err %v; want the first 150, %v", len(got), slices.Equal(got, want[:150]), err, stop)
			}
			goleak.VerifyNone(t, running)

			got = got[:0]
			err = s.Replay(func(obj interface{}) error {
				got = append(got, obj.(metav1.Object).GetName())
				if len(got) == 100 {
					return s.Close()
				}
				return nil
			}, func(string, error) error { return nil })
			if !errors.Is(err, cachefile.ErrClosed) || len(got) < 100 || !slices.Equal(got, want[:len(got)]) {
				t.Fatalf("Replay of a store closed under it: %d objects (in order: %v), err %v; want at least 100, ErrClosed", len(got), slices.Equal(got, want[:len(got)]), err)
			}
			goleak.VerifyNone(t, running)
		})
	}
}
