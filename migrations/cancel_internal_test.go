package migrations

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// dump lists every bucket path, sequence, key and value of a bbolt file.
func dump(t *testing.T, db *bolt.DB) string {
	t.Helper()
	var b bytes.Buffer
	var walk func(path string, bk *bolt.Bucket) error
	walk = func(path string, bk *bolt.Bucket) error {
		fmt.Fprintf(&b, "%s seq=%d\n", path, bk.Sequence())
		return bk.ForEach(func(k, v []byte) error {
			if v == nil {
				return walk(path+"/"+string(k), bk.Bucket(k))
			}
			fmt.Fprintf(&b, "%s %q=%q\n", path, k, v)
			return nil
		})
	}
	if err := db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, bk *bolt.Bucket) error { return walk(string(name), bk) })
	}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func openTemp(t *testing.T, name string) *bolt.DB {
	t.Helper()
	db, err := bolt.Open(filepath.Join(t.TempDir(), name), 0o600, &bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// TestCompactCopyMatchesBolt: compactCopy copies what bbolt's Compact
// copies (nested buckets, sequences, keys, values) into as few pages, in
// small and unbounded transactions; a cancelled context stops it before
// its next transaction with ctx's error.
func TestCompactCopyMatchesBolt(t *testing.T) {
	src := openTemp(t, "src.db")
	if err := src.Update(func(tx *bolt.Tx) error {
		for i := 0; i < 3; i++ {
			top, err := tx.CreateBucket([]byte(fmt.Sprintf("top-%d", i)))
			if err != nil {
				return err
			}
			if err := top.SetSequence(uint64(7 * i)); err != nil {
				return err
			}
			for j := 0; j < 2000; j++ {
				if err := top.Put([]byte(fmt.Sprintf("k%05d", j)), bytes.Repeat([]byte{byte(j)}, 100)); err != nil {
					return err
				}
			}
			inner, err := top.CreateBucket([]byte("inner"))
			if err != nil {
				return err
			}
			deeper, err := inner.CreateBucket([]byte("deeper"))
			if err != nil {
				return err
			}
			if err := deeper.Put([]byte("x"), []byte("y")); err != nil {
				return err
			}
			if err := inner.Put([]byte("z"), []byte{}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	ref := openTemp(t, "ref.db")
	if err := bolt.Compact(ref, src, 1<<20); err != nil {
		t.Fatal(err)
	}
	want := dump(t, src)
	for _, max := range []int64{0, 4096, 1 << 20} {
		dst := openTemp(t, fmt.Sprintf("dst-%d.db", max))
		if err := compactCopy(context.Background(), dst, src, max); err != nil {
			t.Fatal(err)
		}
		if got := dump(t, dst); got != want {
			t.Errorf("txMaxSize %d: the copy differs from the source", max)
		}
		var refPages, gotPages int
		_ = ref.View(func(tx *bolt.Tx) error { refPages = int(tx.Size() / int64(ref.Info().PageSize)); return nil })
		_ = dst.View(func(tx *bolt.Tx) error { gotPages = int(tx.Size() / int64(dst.Info().PageSize)); return nil })
		if gotPages > refPages*11/10 {
			t.Errorf("txMaxSize %d: %d pages, bbolt's Compact %d", max, gotPages, refPages)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dst := openTemp(t, "cancelled.db")
	if err := compactCopy(ctx, dst, src, 4096); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	if got := dump(t, dst); got != "" {
		t.Errorf("cancelled copy wrote: %.200s", got)
	}
}
