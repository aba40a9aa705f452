package cachefile_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/boltinformer/boltinformer/cachefile"
	"github.com/boltinformer/boltinformer/internal/admin/admintest"
	internal "github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// podFile writes a cache file of n Pods (store admintest.PodStore).
func podFile(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cache.db")
	if err := admintest.WriteLarge(path, n); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestInfo: a file opened read-only describes its stores as they were
// written, through the public types, and writes nothing.
func TestInfo(t *testing.T) {
	path := podFile(t, 30)
	before := testutil.StatFile(t, path)
	f, err := cachefile.Open(path, cachefile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// A read-only open shares the file with another reader.
	g, err := cachefile.Open(path, cachefile.Options{LockTimeout: time.Second})
	if err != nil {
		t.Fatalf("a second read-only open: %v", err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	info, err := f.Info()
	if err != nil {
		t.Fatal(err)
	}
	if info.SchemaVersion != cachefile.Version || info.PageSize == 0 || info.DataSize == 0 || info.CreatedAt == "" ||
		!strings.HasPrefix(info.WriterVersion, "boltinformer/") {
		t.Errorf("file info %+v", info)
	}
	if len(info.Stores) != 1 {
		t.Fatalf("stores %+v, want one", info.Stores)
	}
	s := info.Stores[0]
	want := cachefile.Identity{Version: "v1", Kind: "Pod", Resource: "pods"}
	if s.Name != admintest.PodStore || s.Identity == nil || *s.Identity != want || s.Objects != 30 || s.RV != "1029" ||
		s.Relisting || s.UpdatedAt.IsZero() || s.RVUpdatedAt.IsZero() {
		t.Errorf("store %+v (identity %+v)", s, s.Identity)
	}
	if got := s.Indexes; !reflect.DeepEqual(got, map[string]int{"namespace": 10, "node": 30}) {
		t.Errorf("indexes %v", got)
	}
	if f.Path() != path {
		t.Errorf("Path %q, want %q", f.Path(), path)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Info(); !errors.Is(err, cachefile.ErrClosed) {
		t.Errorf("Info after Close: %v, want ErrClosed", err)
	}
	testutil.Unchanged(t, path, before)
}

// TestOpenRefuses: what is not a readable cache file is an error that
// errors.Is matches with this package's sentinels, whichever package of the
// module made it.
func TestOpenRefuses(t *testing.T) {
	dir := t.TempDir()
	notes := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notes, []byte(strings.Repeat("notes\n", 1000)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := cachefile.Open(notes, cachefile.Options{}); !errors.Is(err, cachefile.ErrNotCacheFile) {
		t.Errorf("a text file: %v, want ErrNotCacheFile", err)
	}
	if _, err := cachefile.Open(filepath.Join(dir, "missing.db"), cachefile.Options{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v, want it not to exist (a read-only open never creates one)", err)
	}

	path := podFile(t, 3)
	w, err := internal.Open(path, internal.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := cachefile.Open(path, cachefile.Options{LockTimeout: 50 * time.Millisecond}); !errors.Is(err, cachefile.ErrLocked) {
		t.Errorf("a file a writer holds: %v, want ErrLocked", err)
	}
	problems := cachefile.Check(path, cachefile.CheckOptions{LockTimeout: 50 * time.Millisecond})
	if len(problems) != 1 || !strings.Contains(problems[0].String(), internal.ErrLocked.Error()) {
		t.Errorf("Check of a file a writer holds: %v, want one problem saying it is locked", problems)
	}
}

// TestCheck: an intact file has no problem; a damaged page is reported by
// Check, and Open refuses the file with ErrCorruptFile.
func TestCheck(t *testing.T) {
	path := podFile(t, 300)
	if problems := cachefile.Check(path, cachefile.CheckOptions{}); problems != nil {
		t.Fatalf("an intact file: %v", problems)
	}
	testutil.FlipLeafElement(t, path, 4, 0x40, string(internal.StoresBucket), admintest.PodStore, string(internal.ObjectsBucket))
	before := testutil.StatFile(t, path)
	problems := cachefile.Check(path, cachefile.CheckOptions{MaxProblems: 5})
	if len(problems) == 0 || len(problems) > 5 {
		t.Fatalf("a damaged page: %d problems %v, want 1 to 5", len(problems), problems)
	}
	if _, err := cachefile.Open(path, cachefile.Options{}); !errors.Is(err, cachefile.ErrCorruptFile) {
		t.Errorf("Open of a damaged page: %v, want ErrCorruptFile", err)
	}
	testutil.Unchanged(t, path, before)
}
