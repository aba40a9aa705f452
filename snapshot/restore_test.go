package snapshot_test

import (
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/testutil"
	"github.com/boltinformer/boltinformer/snapshot"
)

// savedSnapshot writes a cache with n pods per store, snapshots it and
// closes it; it returns the snapshot's path and header.
func savedSnapshot(t *testing.T, dir string, n int) (string, snapshot.Header) {
	t.Helper()
	c := openCache(t, filepath.Join(dir, "cache.db"), cachefile.Options{NoSync: true})
	defer c.close(t)
	c.fill(t, n, 0)
	path := filepath.Join(dir, "snap")
	hdr, err := snapshot.Save(background(), c.file(), path, saveOpts())
	if err != nil {
		t.Fatal(err)
	}
	return path, hdr
}

func TestStatus(t *testing.T) {
	snap, hdr := savedSnapshot(t, t.TempDir(), 120)
	before, _ := os.ReadFile(snap)
	rep, err := snapshot.Status(snap)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(snap)
	if !rep.ChecksumValid || rep.Checksum != rep.Computed || len(rep.Checksum) != 64 || rep.Size != fi.Size() || rep.FormatVersion != snapshot.FormatVersion {
		t.Fatalf("report %+v", rep)
	}
	if rep.Header.SchemaVersion != cachefile.Version || len(rep.Header.Stores) != 3 || rep.Header.TxID != hdr.TxID {
		t.Fatalf("header %+v", rep.Header)
	}
	for i, s := range rep.Header.Stores {
		if s.Name != storeNames[i] || s.Objects != 120 || s.RV == "" || len(s.IndexVersions) != 3 {
			t.Fatalf("store %+v", s)
		}
	}
	if after, _ := os.ReadFile(snap); string(after) != string(before) {
		t.Fatal("Status changed the snapshot")
	}
}

// TestRestoreOpensWarm: a restored file is an ordinary cache file at the
// snapshot's RVs, and the store goes on from there.
func TestRestoreOpensWarm(t *testing.T) {
	dir := t.TempDir()
	snap, hdr := savedSnapshot(t, dir, 80)
	dst := filepath.Join(dir, "new-node", "cache", "restored.db") // directories a new node does not have yet
	got, err := snapshot.Restore(snap, dst, snapshot.RestoreOptions{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if got.TxID != hdr.TxID {
		t.Fatalf("restore returned header %+v", got)
	}
	checkRestored(t, dst, hdr)
	if fi, _ := os.Stat(dst); fi.Mode().Perm() != 0o600 {
		t.Fatalf("restored file mode %v", fi.Mode().Perm())
	}
	// The informer resumes: a newer event applies, an old one is a no-op.
	s, err := boltstore.Open(dst, storeNames[0], cachefile.Options{NoSync: true}, storeOpts())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	chs, err := s.Apply([]boltstore.Op{
		{Type: boltstore.OpUpsert, Obj: storePod(1, 1, 0)},
		{Type: boltstore.OpUpsert, Obj: storePod(2, 10_000, 0)},
	}, "10000")
	if err != nil {
		t.Fatal(err)
	}
	if chs[0].Type != boltstore.Unchanged || chs[1].Type != boltstore.Updated || chs[1].Old.(*v1.Pod).ResourceVersion == "" {
		t.Fatalf("changes %+v", chs)
	}
	if err := s.Verify(); err != nil {
		t.Fatal(err)
	}
}

// TestCorruptSnapshot flips one byte at many places: Status either fails
// or reports an invalid checksum, and Restore always refuses with a clear
// error, leaving nothing at the destination.
func TestCorruptSnapshot(t *testing.T) {
	dir := t.TempDir()
	snap, _ := savedSnapshot(t, dir, 40)
	orig, err := os.ReadFile(snap)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	offsets := []int{0, 25, 40, len(orig) / 2, len(orig) - 33, len(orig) - 1}
	for range 10 {
		offsets = append(offsets, rng.IntN(len(orig)))
	}
	for _, off := range offsets {
		bad := append([]byte(nil), orig...)
		bad[off] ^= 0x5a
		path := filepath.Join(dir, "corrupt")
		if err := os.WriteFile(path, bad, 0o600); err != nil {
			t.Fatal(err)
		}
		rep, err := snapshot.Status(path)
		switch {
		case err != nil:
			if !errors.Is(err, snapshot.ErrNotSnapshot) && !errors.Is(err, snapshot.ErrUnsupportedFormat) &&
				!errors.Is(err, snapshot.ErrTruncated) && !errors.Is(err, snapshot.ErrCorruptSnapshot) {
				t.Fatalf("offset %d: status error %v", off, err)
			}
		case rep.ChecksumValid:
			t.Fatalf("offset %d: a flipped byte went unnoticed", off)
		}
		dst := filepath.Join(dir, "restored.db")
		_, err = snapshot.Restore(path, dst, snapshot.RestoreOptions{NoSync: true})
		if err == nil {
			t.Fatalf("offset %d: restore accepted a corrupt snapshot", off)
		}
		if !strings.Contains(err.Error(), path) {
			t.Fatalf("offset %d: error %q does not name the snapshot", off, err)
		}
		if _, err := os.Stat(dst); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("offset %d: refused restore left %s", off, dst)
		}
		if rep.Size > 0 && !rep.ChecksumValid && !errors.Is(err, snapshot.ErrChecksum) {
			t.Fatalf("offset %d: restore error %v, want ErrChecksum", off, err)
		}
		t.Logf("offset %d: %v", off, err)
	}
	if got := leftovers(t, dir); len(got) != 0 {
		t.Fatalf("temporary files left: %v", got)
	}
}

// TestRestoreCrossChecksHeader: a snapshot whose header lies about its
// content is refused even with a valid checksum (for instance one written
// by a buggy tool).
func TestRestoreCrossChecksHeader(t *testing.T) {
	dir := t.TempDir()
	snap, _ := savedSnapshot(t, dir, 30)
	for _, tc := range []struct {
		name string
		edit func(*snapshot.Header)
		want error
	}{
		{"rv", func(h *snapshot.Header) { h.Stores[1].RV = "1" }, snapshot.ErrCorruptSnapshot},
		{"count", func(h *snapshot.Header) { h.Stores[0].Objects++ }, snapshot.ErrCorruptSnapshot},
		{"newer schema", func(h *snapshot.Header) { h.SchemaVersion = 9 }, cachefile.ErrNewerSchema},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forged := filepath.Join(dir, "forged-"+tc.name)
			forge(t, snap, forged, tc.edit)
			if rep, err := snapshot.Status(forged); err != nil || !rep.ChecksumValid {
				t.Fatalf("forged snapshot: %+v %v", rep, err)
			}
			dst := filepath.Join(dir, "restored-"+tc.name)
			_, err := snapshot.Restore(forged, dst, snapshot.RestoreOptions{NoSync: true})
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if _, err := os.Stat(dst); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("refused restore left %s", dst)
			}
		})
	}
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	snap, _ := savedSnapshot(t, dir, 30)
	orig, _ := os.ReadFile(snap)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name string
		path string
		want error
	}{
		{"empty file", write("empty", nil), snapshot.ErrNotSnapshot},
		{"cut in the magic", write("cut-magic", orig[:10]), snapshot.ErrTruncated},
		{"cut in the header", write("cut-header", orig[:60]), snapshot.ErrTruncated},
		{"cut in the database", write("cut-db", orig[:len(orig)/2]), snapshot.ErrTruncated},
		{"last byte missing", write("cut-last", orig[:len(orig)-1]), snapshot.ErrTruncated},
		{"trailing garbage", write("trailing", append(append([]byte(nil), orig...), 0)), snapshot.ErrCorruptSnapshot},
		{"a cache file", filepath.Join(dir, "cache.db"), snapshot.ErrNotSnapshot},
		{"text", write("text", []byte(strings.Repeat("hello\n", 100))), snapshot.ErrNotSnapshot},
		{"missing", filepath.Join(dir, "nope"), fs.ErrNotExist},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := snapshot.Status(tc.path); !errors.Is(err, tc.want) {
				t.Fatalf("status err %v, want %v", err, tc.want)
			}
			dst := filepath.Join(dir, "restored.db")
			if _, err := snapshot.Restore(tc.path, dst, snapshot.RestoreOptions{NoSync: true}); !errors.Is(err, tc.want) {
				t.Fatalf("restore err %v, want %v", err, tc.want)
			}
			if _, err := os.Stat(dst); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("refused restore left %s", dst)
			}
		})
	}
}

func TestRestoreOntoExistingFile(t *testing.T) {
	dir := t.TempDir()
	snap, hdr := savedSnapshot(t, dir, 30)
	dst := filepath.Join(dir, "existing.db")
	if err := os.WriteFile(dst, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := snapshot.Restore(snap, dst, snapshot.RestoreOptions{NoSync: true}); !errors.Is(err, cachefile.ErrExists) {
		t.Fatalf("err %v, want ErrExists", err)
	}
	if b, _ := os.ReadFile(dst); string(b) != "keep me" {
		t.Fatal("a refused restore touched the existing file")
	}
	if _, err := snapshot.Restore(snap, dst, snapshot.RestoreOptions{NoSync: true, Force: true}); err != nil {
		t.Fatal(err)
	}
	checkRestored(t, dst, hdr)

	// A file in use is never replaced, even forced.
	db, err := cachefile.Open(dst, cachefile.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = snapshot.Restore(snap, dst, snapshot.RestoreOptions{NoSync: true, Force: true, LockTimeout: 50e6})
	if !errors.Is(err, cachefile.ErrLocked) {
		t.Fatalf("err %v, want ErrLocked", err)
	}
	if got := leftovers(t, dir); len(got) != 0 {
		t.Fatalf("temporary files left: %v", got)
	}
}

// TestRestoreDamagedPages: restore checks the copy with bbolt's check,
// which walks every page in a goroutine no caller can recover, and a
// forced restore held the destination's lock through a writable bbolt
// open, which walks every page of the file it replaces. Either met a
// damaged element header (the first key of an objects leaf moved 64
// bytes): the process died, or reported bbolt's panic. A damaged
// database inside a snapshot is now ErrCorruptSnapshot naming the page,
// and a damaged file is replaced by a forced restore like any other.
func TestRestoreDamagedPages(t *testing.T) {
	dir := t.TempDir()
	snap, hdr := savedSnapshot(t, dir, 200)
	flip := func(path string) {
		testutil.FlipLeafElement(t, path, 4, 0x40, string(cachefile.StoresBucket), storeNames[0], string(cachefile.ObjectsBucket))
	}

	bad := filepath.Join(dir, "bad.snap")
	damageDatabase(t, snap, bad, flip)
	dst := filepath.Join(dir, "restored.db")
	_, err := snapshot.Restore(bad, dst, snapshot.RestoreOptions{NoSync: true})
	if !errors.Is(err, snapshot.ErrCorruptSnapshot) || !errors.Is(err, cachefile.ErrCorruptFile) ||
		!strings.Contains(err.Error(), "page ") || strings.Contains(err.Error(), "panic") {
		t.Fatalf("restoring a snapshot of a damaged file: want ErrCorruptSnapshot naming the damaged page, got %v", err)
	}
	if _, err := os.Stat(dst); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a refused restore created %s: %v", dst, err)
	}

	damagedDst := filepath.Join(dir, "damaged.db")
	testutil.CopyFile(t, filepath.Join(dir, "cache.db"), damagedDst)
	flip(damagedDst)
	if _, err := snapshot.Restore(snap, damagedDst, snapshot.RestoreOptions{NoSync: true, Force: true}); err != nil {
		t.Fatalf("a forced restore over a damaged file: %v", err)
	}
	checkRestored(t, damagedDst, hdr)
	if got := leftovers(t, dir); len(got) != 0 {
		t.Fatalf("temporary files left: %v", got)
	}
}

// TestRestoreThroughSymlink replaces the file a link points to, not the link.
func TestRestoreThroughSymlink(t *testing.T) {
	dir := t.TempDir()
	snap, hdr := savedSnapshot(t, dir, 10)
	target, link := filepath.Join(dir, "real.db"), filepath.Join(dir, "link.db")
	if err := os.WriteFile(target, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, err := snapshot.Restore(snap, link, snapshot.RestoreOptions{NoSync: true, Force: true}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v", err)
	}
	checkRestored(t, target, hdr)
}

// TestRestoreOverUnsyncedBuild replaces a file whose unsynced build
// stopped: the restored file loses the old marker, so the next open keeps it.
func TestRestoreOverUnsyncedBuild(t *testing.T) {
	dir := t.TempDir()
	snap, hdr := savedSnapshot(t, dir, 30)
	dst := filepath.Join(dir, "crashed.db")
	if err := os.WriteFile(dst, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cachefile.MarkerPath(dst), []byte("crashed.db\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := snapshot.Restore(snap, dst, snapshot.RestoreOptions{NoSync: true, Force: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(cachefile.MarkerPath(dst)); err == nil {
		t.Fatal("the restore left the old marker, which would discard the restored file")
	}
	checkRestored(t, dst, hdr)
}
