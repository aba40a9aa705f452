package boltstore

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// TestReplayChunkBoundedByBytes: a chunk holds replayChunk small records,
// but large ones only up to about replayChunkBytes, and the chunks cover
// every record once, each decoded.
func TestReplayChunkBoundedByBytes(t *testing.T) {
	for _, tc := range []struct {
		name      string
		padding   int // incompressible bytes per object
		wantFirst func(items []replayItem, size int) bool
	}{
		{"small records", 0, func(items []replayItem, _ int) bool { return len(items) == replayChunk }},
		{"large records", 16 << 10, func(items []replayItem, size int) bool {
			return len(items) < replayChunk && size >= replayChunkBytes && size < replayChunkBytes+24<<10
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open(filepath.Join(t.TempDir(), "c.db"), "pods", cachefile.Options{NoSync: true}, StoreOptions{Object: &v1.Pod{}})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			const n = 150
			ops := make([]Op, n)
			for i := range ops {
				p := testutil.Pod("a", fmt.Sprintf("p%03d", i), "1")
				if tc.padding > 0 {
					b := make([]byte, tc.padding/2)
					_, _ = rand.Read(b)
					p.Annotations = map[string]string{"pad": hex.EncodeToString(b)}
				}
				ops[i] = Op{Type: OpUpsert, Obj: p}
			}
			if _, err := s.Apply(ops, "2"); err != nil {
				t.Fatal(err)
			}
			var after []byte
			total := 0
			for chunk := 0; ; chunk++ {
				bounds, more, err := s.nextChunk(&after)
				if err != nil {
					t.Fatal(err)
				}
				items, err := s.decodeChunk(bounds)
				if err != nil {
					t.Fatal(err)
				}
				size := 0
				for _, it := range items {
					if it.err != nil {
						t.Fatalf("chunk %d: %s: %v", chunk, it.key, it.err)
					}
					size += storedSize(t, s, it.key)
					if want := fmt.Sprintf("a/p%03d", total); it.key != want {
						t.Fatalf("chunk %d: key %s, want %s", chunk, it.key, want)
					}
					total++
				}
				if chunk == 0 && !tc.wantFirst(items, size) {
					t.Errorf("first chunk: %d records of %d bytes", len(items), size)
				}
				if !more {
					break
				}
			}
			if total != n {
				t.Errorf("chunks held %d records, want %d", total, n)
			}
		})
	}
}

// storedSize returns the length of the record stored under key.
func storedSize(t *testing.T, s *Store, key string) int {
	t.Helper()
	n := 0
	if err := s.view(func(b *cachefile.Buckets) error {
		n = len(b.Objects.Get([]byte(key)))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// While the caller hands on one chunk of a pipelined Replay, every decoder
// has a chunk of its own: with two workers, the two chunks after the one
// handed on are both sent to the decoders, though only one of them fits in
// ordered.
func TestReplayKeepsEveryDecoderBusy(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "c.db"), "pods", cachefile.Options{NoSync: true}, StoreOptions{Object: &v1.Pod{}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ops := make([]Op, 6*replayChunk)
	for i := range ops {
		ops[i] = Op{Type: OpUpsert, Obj: testutil.Pod("a", fmt.Sprintf("p%03d", i), "1")}
	}
	if _, err := s.Apply(ops, "2"); err != nil {
		t.Fatal(err)
	}
	const workers = 2
	ordered, work := replayQueues(workers)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); s.findBatches(ordered, work, stop) }()
	var sent atomic.Int32
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		for range work { // the decoders
			sent.Add(1)
		}
	}()
	<-ordered // the chunk the caller hands on, for as long as the test runs
	testutil.Eventually(t, "the next two chunks sent to the decoders", 10*time.Second, func() bool { return sent.Load() == 1+workers })
	close(stop)
	<-done
	<-drained
}
