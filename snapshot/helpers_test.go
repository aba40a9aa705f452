package snapshot_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	publicfile "github.com/boltinformer/boltinformer/cachefile"
	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/boltstore/boltstoretest"
	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/testutil"
	"github.com/boltinformer/boltinformer/snapshot"
)

var storeNames = []string{"pods-a", "pods-b", "pods-c"}

func podIndexers() cache.Indexers {
	return cache.Indexers{
		cache.NamespaceIndex: cache.MetaNamespaceIndexFunc,
		"node": func(obj interface{}) ([]string, error) {
			return []string{obj.(*v1.Pod).Spec.NodeName}, nil
		},
		"app": func(obj interface{}) ([]string, error) {
			if app, ok := obj.(*v1.Pod).Labels["app"]; ok {
				return []string{app}, nil
			}
			return nil, nil
		},
	}
}

func storeOpts() boltstore.StoreOptions {
	return boltstore.StoreOptions{Object: &v1.Pod{}, Indexers: podIndexers()}
}

// storePod is pod i of a store at resourceVersion rv; pad adds an
// annotation of that many bytes.
func storePod(i int, rv uint64, pad int) *v1.Pod {
	opts := []testutil.PodOption{
		testutil.Label("app", "a"+strconv.Itoa(i%5)),
		testutil.Node("node-" + strconv.FormatUint((uint64(i)+rv)%4, 10)),
	}
	if pad > 0 {
		opts = append(opts, func(p *v1.Pod) { p.Annotations = map[string]string{"pad": padding(i, rv, pad)} })
	}
	return testutil.Pod("ns-"+strconv.Itoa(i%3), fmt.Sprintf("p-%04d", i), strconv.FormatUint(rv, 10), opts...)
}

// padding is n bytes that do not compress (payloads are compressed from
// schema v3 on, and the tests size the file by their pad).
func padding(i int, rv uint64, n int) string {
	rng := rand.New(rand.NewPCG(uint64(i), rv))
	const hex = "0123456789abcdef"
	b := make([]byte, n)
	for j := range b {
		b[j] = hex[rng.IntN(len(hex))]
	}
	return string(b)
}

// cache is an open file with its stores.
type testCache struct {
	path   string
	db     *cachefile.DB
	stores []*boltstore.Store
	// rv is the last resourceVersion handed out to a writer.
	rv atomic.Uint64
}

// file is the cache's file as Save takes it.
func (c *testCache) file() *publicfile.File { return (*publicfile.File)(c.db) }

func openCache(t testing.TB, path string, dbOpts cachefile.Options) *testCache {
	t.Helper()
	db, err := cachefile.Open(path, dbOpts)
	if err != nil {
		t.Fatal(err)
	}
	c := &testCache{path: path, db: db}
	for _, n := range storeNames {
		s, err := boltstore.New(db, n, storeOpts())
		if err != nil {
			t.Fatal(err)
		}
		c.stores = append(c.stores, s)
		if rv, _ := strconv.ParseUint(s.LastStoreSyncResourceVersion(), 10, 64); rv > c.rv.Load() {
			c.rv.Store(rv)
		}
	}
	return c
}

// fill writes n pods to every store, each batch at its own RV.
func (c *testCache) fill(t testing.TB, n, pad int) {
	t.Helper()
	for _, s := range c.stores {
		for i := 0; i < n; i += 100 {
			rv := c.rv.Add(1)
			var ops []boltstore.Op
			for j := i; j < min(i+100, n); j++ {
				ops = append(ops, boltstore.Op{Type: boltstore.OpUpsert, Obj: storePod(j, rv, pad)})
			}
			if _, err := s.Apply(ops, strconv.FormatUint(rv, 10)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// batch writes one random batch to s: maybe a delete, then 1–10 upserts,
// all at a new RV, so the store's highest object RV always equals its
// stored RV.
func (c *testCache) batch(s *boltstore.Store, rng *rand.Rand, keys, pad int) error {
	rv := c.rv.Add(1)
	var ops []boltstore.Op
	upserts := 1 + rng.IntN(10)
	first := rng.IntN(keys)
	if rng.IntN(3) == 0 {
		victim := (first + upserts + rng.IntN(keys-upserts)) % keys
		ops = append(ops, boltstore.Op{Type: boltstore.OpDelete, Obj: cache.DeletedFinalStateUnknown{Key: fmt.Sprintf("ns-%d/p-%04d", victim%3, victim)}})
	}
	for j := 0; j < upserts; j++ {
		ops = append(ops, boltstore.Op{Type: boltstore.OpUpsert, Obj: storePod((first+j)%keys, rv, pad)})
	}
	_, err := s.Apply(ops, strconv.FormatUint(rv, 10))
	return err
}

// writers keeps one writer per store committing until stop is closed; it
// returns a counter of commits and a wait function.
func (c *testCache) writers(t testing.TB, stop <-chan struct{}, keys, pad int) (*atomic.Int64, func()) {
	var commits atomic.Int64
	var wg sync.WaitGroup
	for i, s := range c.stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 99))
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := c.batch(s, rng, keys, pad); err != nil {
					t.Errorf("writer %s: %v", s.Name(), err)
					return
				}
				commits.Add(1)
			}
		}()
	}
	return &commits, wg.Wait
}

func (c *testCache) close(t testing.TB) {
	t.Helper()
	if err := c.db.Close(); err != nil {
		t.Fatal(err)
	}
}

// checkSnapshot verifies a snapshot end to end: Status says it is intact
// and agrees with hdr; it restores; every store passes Verify with its
// IndexFuncs; its RV equals the header's and the highest object RV in it.
func checkSnapshot(t testing.TB, snap string, hdr snapshot.Header) {
	t.Helper()
	rep, err := snapshot.Status(snap)
	if err != nil {
		t.Fatalf("status %s: %v", snap, err)
	}
	if !rep.ChecksumValid {
		t.Fatalf("status %s: checksum invalid", snap)
	}
	if hdr.DBSize != 0 && (rep.Header.TxID != hdr.TxID || rep.Header.DBSize != hdr.DBSize) {
		t.Fatalf("status header %+v, Save returned %+v", rep.Header, hdr)
	}
	dst := filepath.Join(t.TempDir(), "restored.db")
	if _, err := snapshot.Restore(snap, dst, snapshot.RestoreOptions{NoSync: true}); err != nil {
		t.Fatalf("restore %s: %v", snap, err)
	}
	boltstoretest.CheckFile(t, dst)
	checkRestored(t, dst, rep.Header)
}

// checkRestored opens a restored file as an informer would and checks
// it against the snapshot's header.
func checkRestored(t testing.TB, path string, hdr snapshot.Header) {
	t.Helper()
	c := openCache(t, path, cachefile.Options{NoSync: true})
	defer c.close(t)
	if len(hdr.Stores) != len(storeNames) {
		t.Fatalf("header lists %d stores", len(hdr.Stores))
	}
	for i, s := range c.stores {
		want := hdr.Stores[i]
		if r := s.OpenReport(); r.Reset || len(r.RebuiltIndexes) > 0 {
			t.Fatalf("store %s: opening the restored file changed it: %+v", s.Name(), r)
		}
		if err := s.Verify(); err != nil {
			t.Fatalf("store %s: %v", s.Name(), err)
		}
		rv := s.LastStoreSyncResourceVersion()
		if want.Name != s.Name() || rv != want.RV {
			t.Fatalf("store %s at rv %q, header says %s at %q", s.Name(), rv, want.Name, want.RV)
		}
		var maxRV uint64
		n := 0
		err := s.ForEach(func(obj interface{}) error {
			r, _ := strconv.ParseUint(obj.(*v1.Pod).ResourceVersion, 10, 64)
			maxRV = max(maxRV, r)
			n++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if n != want.Objects || strconv.FormatUint(maxRV, 10) != rv {
			t.Fatalf("store %s: %d objects up to rv %d, header says %d objects at rv %s", s.Name(), n, maxRV, want.Objects, rv)
		}
	}
}

// forge rewrites a snapshot with an edited header and a valid checksum.
func forge(t testing.TB, src, dst string, edit func(*snapshot.Header)) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	const prefix = len("boltinformer-snapshot\n") + 8
	hlen := int(binary.BigEndian.Uint32(b[prefix-4 : prefix]))
	var hdr snapshot.Header
	if err := json.Unmarshal(b[prefix:prefix+hlen], &hdr); err != nil {
		t.Fatal(err)
	}
	edit(&hdr)
	enc, err := json.Marshal(hdr)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := snapshot.WritePrefix(&out, enc); err != nil {
		t.Fatal(err)
	}
	out.Write(b[prefix+hlen : len(b)-sha256.Size])
	sum := sha256.Sum256([]byte(out.String()))
	out.Write(sum[:])
	if err := os.WriteFile(dst, []byte(out.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}

func leftovers(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	m, _ := filepath.Glob(filepath.Join(dir, "*.tmp-*"))
	out = append(out, m...)
	m, _ = filepath.Glob(filepath.Join(dir, "*.restore-*"))
	return append(out, m...)
}

func background() context.Context { return context.Background() }

var _ = time.Second

// damageDatabase rewrites a snapshot with its database damaged by damage
// (given the database as a file) and a valid checksum: what Save copies
// from a file damaged on disk.
func damageDatabase(t testing.TB, src, dst string, damage func(dbPath string)) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	const prefix = len("boltinformer-snapshot\n") + 8
	start := prefix + int(binary.BigEndian.Uint32(b[prefix-4:prefix]))
	end := len(b) - sha256.Size
	dbPath := filepath.Join(t.TempDir(), "db")
	if err := os.WriteFile(dbPath, b[start:end], 0o600); err != nil {
		t.Fatal(err)
	}
	damage(dbPath)
	db, err := os.ReadFile(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(db) != end-start {
		t.Fatalf("damage changed the database's length from %d to %d bytes", end-start, len(db))
	}
	out := append(append([]byte(nil), b[:start]...), db...)
	sum := sha256.Sum256(out)
	if err := os.WriteFile(dst, append(out, sum[:]...), 0o600); err != nil {
		t.Fatal(err)
	}
}
