package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/boltinformer/boltinformer/internal/admin/admintest"
	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// TestPointReadFlipsAreErrorsNeverCrashes damages, one byte at a time,
// the headers of the pages `cachectl get pod NAME` reads on its way to the
// Pod (the objects bucket's root branch page and the leaf holding the
// key), which a point read validates by itself rather than with the whole
// file: each run prints the Pod, or fails with exit 1 and an error naming
// the damage (or the Pod not found), never a panic or a fault.
func TestPointReadFlipsAreErrorsNeverCrashes(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "good.db")
	if err := admintest.WriteLarge(src, 300); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	branch, leaf := firstObjectsPath(t, src)
	path := filepath.Join(dir, "flipped.db")
	for _, pg := range []struct {
		name string
		id   uint64
	}{{"objects branch", branch}, {"objects leaf", leaf}} {
		// The page header and the first element's header.
		for i := 0; i < 32; i++ {
			off := int(pg.id)*cachefile.PageSize + i
			d := append([]byte(nil), data...)
			d[off] ^= 0xff
			if err := os.WriteFile(path, d, 0o600); err != nil {
				t.Fatal(err)
			}
			run := testutil.RunToEnd(t, time.Minute, []string{asCachectl + "=1"}, "get", "pod", "pod-00000", "-n", "ns-0", "--db", path)
			code, out := run.State.ExitCode(), run.Stdout+run.Stderr
			ok := code == 0 && strings.Contains(run.Stdout, "pod-00000") ||
				code == 1 && (strings.Contains(run.Stderr, "corrupt") || strings.Contains(run.Stderr, "not found"))
			if !ok || strings.Contains(out, "panic") || strings.Contains(out, "runtime error") {
				t.Errorf("%s %d, header byte %d ^ 0xff: want the Pod, or exit 1 with an error naming the damage; got exit %d (%v)\nstdout:\n%s\nstderr:\n%s",
					pg.name, pg.id, i, code, run.State, run.Stdout, run.Stderr)
			}
		}
	}
}

// firstObjectsPath returns the root page of the Pod store's objects
// bucket, which must be a branch page, and its first child, a leaf (the
// page holding the first key).
func firstObjectsPath(t *testing.T, path string) (branch, leaf uint64) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	err = db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(cachefile.StoresBucket).Bucket([]byte(admintest.PodStore)).Bucket(cachefile.ObjectsBucket)
		branch = uint64(b.Root())
		return nil
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := data[branch*cachefile.PageSize:]
	if flags := binary.LittleEndian.Uint16(page[8:]); flags != 0x01 {
		t.Fatalf("%s: the objects bucket's root is page %d of type %#x; the test needs a branch page", path, branch, flags)
	}
	leaf = binary.LittleEndian.Uint64(page[16+8:])
	if flags := binary.LittleEndian.Uint16(data[leaf*cachefile.PageSize+8:]); flags != 0x02 {
		t.Fatal(fmt.Sprintf("%s: page %d, the objects bucket's first child, has type %#x, not a leaf", path, leaf, flags))
	}
	return branch, leaf
}
