package migrations_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/boltinformer/boltinformer/internal/boltstore/boltstoretest"
	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/testutil"
	"github.com/boltinformer/boltinformer/migrations"
	"github.com/boltinformer/boltinformer/migrations/migrationstest"
)

// writeV2 makes a schema v2 file the way a v2 build left it: a v1 fixture
// migrated to v2 (the v1 → v2 step writes v2 envelopes).
func writeV2(t testing.TB, path string, nPods int) []storeSpec {
	t.Helper()
	want := writeV1(t, path, nPods)
	o := opts()
	o.Target = u64(2)
	if _, err := migrations.Migrate(path, o); err != nil {
		t.Fatal(err)
	}
	if v := migrationstest.SchemaVersion(t, path); v != 2 {
		t.Fatalf("fixture is v%d", v)
	}
	return want
}

// recordsOf returns every record of store in the file at path, decoded
// as the given envelope version.
func recordsOf(t testing.TB, path, store string, version uint8) map[string]*cachefile.Record {
	t.Helper()
	b, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	out := map[string]*cachefile.Record{}
	err = b.View(func(tx *bolt.Tx) error {
		bs, err := cachefile.StoreTx(tx, store)
		if err != nil {
			return err
		}
		return bs.Objects.ForEach(func(k, v []byte) error {
			rec, err := cachefile.DecodeRecordVersion(k, v, version)
			if err != nil {
				return err
			}
			rec.Payload = append([]byte(nil), rec.Payload...)
			out[string(k)] = rec
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestMigrateV2ToV3AndBack: a v2 file is refused by this build, migrates to
// v3 with every object, index and RV and its plaintext payloads compressed,
// passes the check; the revert gives back the v2 file exactly (payloads
// decompressed), which passes v2's check and is refused again; and up
// again is readable with the same content.
func TestMigrateV2ToV3AndBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	want := writeV2(t, path, 200)
	if _, err := cachefile.Open(path, cachefile.Options{NoSync: true}); !errors.Is(err, cachefile.ErrNeedsMigration) {
		t.Fatalf("a v2 file: want ErrNeedsMigration, got %v", err)
	}
	v2Dump := migrationstest.Dump(t, path)
	v2Records := recordsOf(t, path, "pods", 2)
	rep, err := migrations.Migrate(path, opts())
	if err != nil {
		t.Fatal(err)
	}
	if rep.From != 2 || rep.To != 3 || len(rep.Steps) != 1 || !rep.Steps[0].Rewrite {
		t.Fatalf("report %+v", rep)
	}
	boltstoretest.CheckFile(t, path)
	verifyV1(t, path, want)
	compressed := 0
	for k, rec := range recordsOf(t, path, "pods", 3) {
		plain, err := cachefile.DecompressPayload(rec.Compression, rec.Payload, nil)
		if err != nil {
			t.Fatalf("key %s: %v", k, err)
		}
		if string(plain) != string(v2Records[k].Payload) {
			t.Fatalf("key %s: payload changed by the migration", k)
		}
		if rec.Compression == cachefile.CompressionS2 {
			compressed++
		}
	}
	if compressed == 0 {
		t.Fatal("no payload was compressed")
	}

	revertAndRemigrate(t, path, 2, v2Dump, want, func(rep migrations.Report) bool {
		return len(rep.Steps) == 1 && rep.Steps[0].Revert
	})
}

// TestRevertV3RefusesCompressedSealedRecords: a sealed payload that was
// compressed before sealing cannot be decompressed without its key, and v2
// has no place for its compression: the revert refuses, naming the record,
// and leaves the file as it was.
func TestRevertV3RefusesCompressedSealedRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	writeV2(t, path, 20)
	if _, err := migrations.Migrate(path, opts()); err != nil {
		t.Fatal(err)
	}
	b, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	var key string
	err = b.Update(func(tx *bolt.Tx) error {
		bs, err := cachefile.StoreTx(tx, "pods")
		if err != nil {
			return err
		}
		k, v := bs.Objects.Cursor().First()
		rec, err := cachefile.DecodeRecord(k, v)
		if err != nil {
			return err
		}
		// Stands for a sealed payload: the revert must not look inside it.
		rec.KeyID, rec.Compression = "key-1", cachefile.CompressionS2
		enc, err := cachefile.EncodeRecord(k, rec)
		if err != nil {
			return err
		}
		key = string(k)
		return bs.Objects.Put(append([]byte(nil), k...), enc)
	})
	b.Close()
	if err != nil {
		t.Fatal(err)
	}
	before := testutil.StatFile(t, path)
	o := opts()
	o.Target = u64(2)
	_, err = migrations.Migrate(path, o)
	if !errors.Is(err, migrations.ErrIrreversible) {
		t.Fatalf("want ErrIrreversible, got %v", err)
	}
	if got := err.Error(); !strings.Contains(got, key) || !strings.Contains(got, "key-1") {
		t.Errorf("error %q does not name the record %q and its key", got, key)
	}
	if testutil.StatFile(t, path) != before {
		t.Fatal("a refused revert changed the file")
	}
}

// TestRewriteStopsAtADamagedRecord: a record that fails its checksum in
// the middle of a store of many conversion chunks stops the rewrite with
// ErrLayout naming its key; the file is the v2 file it was, no work file
// is left, and every converting goroutine has stopped (goleak, TestMain).
func TestRewriteStopsAtADamagedRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	writeV2(t, path, 3000)
	var damaged string
	writeRaw(t, path, func(tx *bolt.Tx) error {
		b, err := cachefile.StoreTx(tx, "pods")
		if err != nil {
			return err
		}
		c := b.Objects.Cursor()
		k, v := c.First()
		for range 1500 {
			k, v = c.Next()
		}
		damaged = string(k)
		v = append([]byte(nil), v...)
		v[len(v)-1] ^= 0x40
		return b.Objects.Put([]byte(damaged), v)
	})
	before := migrationstest.Dump(t, path)
	_, err := migrations.Migrate(path, opts())
	if !errors.Is(err, migrations.ErrLayout) || !strings.Contains(err.Error(), damaged) {
		t.Fatalf("want ErrLayout naming %q, got %v", damaged, err)
	}
	if d := migrationstest.DiffDumps(before, migrationstest.Dump(t, path)); d != "" {
		t.Fatalf("a failed rewrite changed the file:\n%s", d)
	}
	if l := leftovers(t, path); len(l) != 0 {
		t.Fatalf("work files left: %v", l)
	}
}

// TestMinimumsFollowTheVersion: the step to v3 records the oldest schema
// that reads and writes the file (cachefile's minimums); its revert drops
// them, since v2 has no such keys and its builds need their own version.
func TestMinimumsFollowTheVersion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	writeV2(t, path, 20)
	meta := func() map[string]string {
		b, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		out := map[string]string{}
		_ = b.View(func(tx *bolt.Tx) error {
			return tx.Bucket(cachefile.MetaBucket).ForEach(func(k, v []byte) error { out[string(k)] = string(v); return nil })
		})
		return out
	}
	if _, err := migrations.Migrate(path, opts()); err != nil {
		t.Fatal(err)
	}
	m := meta()
	if m["min-reader-version"] != fmt.Sprint(cachefile.MinReaderVersion) || m["min-writer-version"] != fmt.Sprint(cachefile.MinWriterVersion) {
		t.Fatalf("v3 meta %v lacks the minimums %d and %d", m, cachefile.MinReaderVersion, cachefile.MinWriterVersion)
	}
	o := opts()
	o.Target = u64(2)
	if _, err := migrations.Migrate(path, o); err != nil {
		t.Fatal(err)
	}
	if m := meta(); m["min-reader-version"] != "" || m["min-writer-version"] != "" {
		t.Fatalf("the v2 file keeps v3's minimums: %v", m)
	}
}
