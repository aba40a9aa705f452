package boltinformer_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/listwatcher"
	"github.com/boltinformer/boltinformer/internal/testutil"
	"github.com/boltinformer/boltinformer/internal/testutil/schemafixture"
	"github.com/boltinformer/boltinformer/migrations/migrationstest"
)

// stampNewer makes the closed file at path look written by a build of
// schema version with the given minimums, as a later schema that kept
// this build's layout would.
func stampNewer(t *testing.T, path string, version, minReader, minWriter uint64) {
	t.Helper()
	b, err := bolt.Open(path, 0o600, &bolt.Options{NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(cachefile.MetaBucket)
		for k, v := range map[string]uint64{string(cachefile.MetaSchemaVersion): version,
			string(cachefile.MetaMinReaderVersion): minReader, string(cachefile.MetaMinWriterVersion): minWriter} {
			if err := meta.Put([]byte(k), []byte(strconv.FormatUint(v, 10))); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// setAsideFiles lists the files beside path set aside as newer.
func setAsideFiles(t *testing.T, path string) []string {
	t.Helper()
	m, err := filepath.Glob(path + ".newer-v*")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestOpenResumesFromANewerFileItCanWrite: a rollback onto a file that a
// newer build wrote with changes this build may ignore (its minimum writer
// is this build's schema) resumes from it, no LIST but the resume check,
// and leaves the file's schema and minimums as the newer build set them.
func TestOpenResumesFromANewerFileItCanWrite(t *testing.T) {
	path := writeFixture(t, cachefile.Version)
	newer := cachefile.Version + 1
	stampNewer(t, path, newer, cachefile.Version, cachefile.Version)
	r := runFixture(t, path, boltinformer.Options{Logger: testutil.Logger(t)})
	r.assertResumed(t)
	for _, reason := range []string{"corrupt", "newer_schema", "not_durable"} {
		if n := counter(t, r.reg, "boltinformer_file_rebuilds_total", map[string]string{"reason": reason}); n != 0 {
			t.Errorf("file_rebuilds_total{reason=%q} = %v, want 0", reason, n)
		}
	}
	r.stop()
	if v := migrationstest.SchemaVersion(t, path); v != newer {
		t.Fatalf("the file is v%d after the rollback, want the newer build's v%d kept", v, newer)
	}
	if m := setAsideFiles(t, path); len(m) != 0 {
		t.Fatalf("files set aside: %v", m)
	}
}

// TestOpenSetsAsideANewerFileItCannotWrite: a rollback onto a file this
// build cannot write moves it aside as NAME.newer-vN-TIMESTAMP (the copy
// of an earlier rollback removed: one is kept), logs it at error level,
// counts it, and starts a new file that the informer relists; Open never
// fails. RefuseNewerSchema fails instead and writes nothing.
func TestOpenSetsAsideANewerFileItCannotWrite(t *testing.T) {
	path := writeFixture(t, cachefile.Version)
	newer := cachefile.Version + 2
	stampNewer(t, path, newer, newer, newer)
	before := testutil.StatFile(t, path)
	_, err := boltinformer.Open(path, boltinformer.Options{Logger: testutil.Logger(t), NoSync: true, RefuseNewerSchema: true})
	if !errors.Is(err, cachefile.ErrNewerSchema) {
		t.Fatalf("RefuseNewerSchema: %v, want ErrNewerSchema", err)
	}
	testutil.Unchanged(t, path, before)

	content := migrationstest.Dump(t, path)
	earlier := path + ".newer-v9-20260101T000000.000000000Z"
	if err := os.WriteFile(earlier, []byte("an earlier rollback's copy"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runFixture(t, path, boltinformer.Options{Logger: testutil.Logger(t)})
	r.converge(t)
	h := schemafixture.History()
	// A cold start: a WatchList, which the history server refuses, then
	// a LIST and a WATCH from its RV.
	want := []string{`WATCH rv="" sendInitialEvents`, fmt.Sprintf(`LIST rv="" limit=%d`, listwatcher.DefaultPageSize), fmt.Sprintf(`WATCH rv="%d"`, h.Final())}
	if got := r.lw.requests(); !slices.Equal(got, want) {
		t.Fatalf("requests %q, want a relist %q", got, want)
	}
	if n := counter(t, r.reg, "boltinformer_file_rebuilds_total", map[string]string{"reason": "newer_schema"}); n != 1 {
		t.Errorf("file_rebuilds_total{reason=newer_schema} = %v, want 1", n)
	}
	moved := setAsideFiles(t, path)
	if len(moved) != 1 || moved[0] != r.cache.MovedAside() || !strings.HasPrefix(moved[0], fmt.Sprintf("%s.newer-v%d-", path, newer)) {
		t.Fatalf("set aside %v (MovedAside %q), want one %s.newer-v%d-TIMESTAMP", moved, r.cache.MovedAside(), path, newer)
	}
	if d := migrationstest.DiffDumps(content, migrationstest.Dump(t, moved[0])); d != "" {
		t.Fatalf("the file set aside is not the newer build's:\n%s", d)
	}
	if log := r.log.String(); !strings.Contains(log, `"msg"="Cache file was written by a newer build with changes this build cannot write`) || !strings.Contains(log, `"error"=`) {
		t.Errorf("no error line about the newer file:\n%s", log)
	}
	r.stop()
	if v := migrationstest.SchemaVersion(t, path); v != cachefile.Version {
		t.Fatalf("the new file is v%d, want v%d", v, cachefile.Version)
	}
}

// TestSetAsideThroughALink: a file opened through a symbolic link is set
// aside beside the file it names, and the link then names the new file.
func TestSetAsideThroughALink(t *testing.T) {
	real := writeFixture(t, cachefile.Version)
	stampNewer(t, real, cachefile.Version+2, cachefile.Version+2, cachefile.Version+2)
	link := filepath.Join(t.TempDir(), "cache.db")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	c, err := boltinformer.Open(link, boltinformer.Options{Logger: testutil.Logger(t), NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if moved := setAsideFiles(t, real); len(moved) != 1 || moved[0] != c.MovedAside() {
		t.Fatalf("set aside %v (MovedAside %q), want one beside %s", moved, c.MovedAside(), real)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v", err)
	}
	if v := migrationstest.SchemaVersion(t, real); v != cachefile.Version {
		t.Fatalf("the link names a v%d file, want the new v%d one", v, cachefile.Version)
	}
}
