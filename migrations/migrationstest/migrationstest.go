// Package migrationstest writes cache files in old schema versions, so
// that tests of package migrations and of cachectl's migrate command can
// start from a real old file, and reads any version back (Dump,
// SchemaVersion) so a test can compare a file before and after. It writes
// the layouts exactly as defined by package migrations (internal/v0) and
// never through boltstore.
package migrationstest

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer/internal/cachefile"
	v0 "github.com/boltinformer/boltinformer/migrations/internal/v0"
)

// V0Store is one store of a schema v0 file.
type V0Store struct {
	// Name is the store's name (not "meta").
	Name string
	// RV is the store's resourceVersion; empty writes none.
	RV string
	// Objects are stored under their keys with their index values.
	Objects []runtime.Object
	// Indexers are the store's indexes (each gets a bucket, even if empty).
	Indexers cache.Indexers
	// KeyFunc makes keys; nil means cache.MetaNamespaceKeyFunc.
	KeyFunc cache.KeyFunc
}

// WriteV0 creates a schema v0 file at path (which must not exist) holding
// stores, in one transaction. Payloads use boltstore's codecs: protobuf
// for types with generated protobuf methods, the content's JSON for
// unstructured objects, encoding/json otherwise.
func WriteV0(path string, stores ...V0Store) error {
	db, err := bolt.Open(path, 0o600, &bolt.Options{NoSync: true, NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
	if err != nil {
		return fmt.Errorf("create v0 file %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, s := range stores {
			if err := writeStore(tx, s); err != nil {
				return fmt.Errorf("store %s: %w", s.Name, err)
			}
		}
		return nil
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write v0 file %s: %w", path, err)
	}
	return nil
}

func writeStore(tx *bolt.Tx, s V0Store) error {
	if !v0.IsStore([]byte(s.Name)) {
		return fmt.Errorf("store name %q is reserved in v0", s.Name)
	}
	keyFunc := s.KeyFunc
	if keyFunc == nil {
		keyFunc = cache.MetaNamespaceKeyFunc
	}
	root, err := tx.CreateBucket([]byte(s.Name))
	if err != nil {
		return err
	}
	objects, err := root.CreateBucket(v0.ObjectsBucket)
	if err != nil {
		return err
	}
	index, err := root.CreateBucket(v0.IndexBucket)
	if err != nil {
		return err
	}
	if s.RV != "" {
		if err := root.Put(v0.RVKey, []byte(s.RV)); err != nil {
			return err
		}
	}
	names := make([]string, 0, len(s.Indexers))
	for n := range s.Indexers {
		names = append(names, n)
		if _, err := index.CreateBucket([]byte(n)); err != nil {
			return err
		}
	}
	sort.Strings(names)
	// Insert in key order: bbolt splits nodes only at commit, so unsorted
	// puts into one transaction cost quadratic time.
	keyed := make([]keyedObject, 0, len(s.Objects))
	for _, obj := range s.Objects {
		key, err := keyFunc(obj)
		if err != nil {
			return err
		}
		keyed = append(keyed, keyedObject{key, obj})
	}
	sort.Slice(keyed, func(i, j int) bool { return keyed[i].key < keyed[j].key })
	for _, ko := range keyed {
		key, obj := ko.key, ko.obj
		rec, err := record(obj)
		if err != nil {
			return fmt.Errorf("key %q: %w", key, err)
		}
		enc, err := v0.Encode(rec)
		if err != nil {
			return err
		}
		if err := objects.Put([]byte(key), enc); err != nil {
			return err
		}
		for _, n := range names {
			vals, err := s.Indexers[n](obj)
			if err != nil {
				return fmt.Errorf("key %q index %q: %w", key, n, err)
			}
			ib := index.Bucket([]byte(n))
			for _, v := range vals {
				vb, err := ib.CreateBucketIfNotExists(v0.ValueBucket(v))
				if err != nil {
					return err
				}
				if err := vb.Put([]byte(key), nil); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

type keyedObject struct {
	key string
	obj runtime.Object
}

type protoMarshaler interface {
	Marshal() ([]byte, error)
	Unmarshal([]byte) error
}

func record(obj runtime.Object) (*v0.Record, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	rec := &v0.Record{Version: v0.RecordVersion, RV: m.GetResourceVersion(), UID: string(m.GetUID())}
	if t, err := meta.TypeAccessor(obj); err == nil {
		rec.APIVersion, rec.Kind = t.GetAPIVersion(), t.GetKind()
	}
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		rec.Codec = uint8(cachefile.CodecUnstructuredJSON)
		rec.Payload, err = json.Marshal(o.Object)
	case protoMarshaler:
		rec.Codec = uint8(cachefile.CodecProtobuf)
		rec.Payload, err = o.Marshal()
	default:
		rec.Codec = uint8(cachefile.CodecJSON)
		rec.Payload, err = json.Marshal(obj)
	}
	return rec, err
}

// Dump lists every bucket and key of a closed file, one line each, in
// order, so two files can be compared logically.
func Dump(t testing.TB, path string) []string {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatalf("dump %s: %v", path, err)
	}
	defer db.Close()
	var out []string
	var walk func(prefix string, b *bolt.Bucket)
	walk = func(prefix string, b *bolt.Bucket) {
		_ = b.ForEach(func(k, v []byte) error {
			if sub := b.Bucket(k); sub != nil {
				out = append(out, fmt.Sprintf("%s/%q/", prefix, k))
				walk(fmt.Sprintf("%s/%q", prefix, k), sub)
				return nil
			}
			out = append(out, fmt.Sprintf("%s/%q=%x", prefix, k, v))
			return nil
		})
	}
	_ = db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			out = append(out, fmt.Sprintf("%q/", name))
			walk(fmt.Sprintf("%q", name), b)
			return nil
		})
	})
	return out
}

// DiffDumps is the lines only a has (-) and only b has (+), sorted, at
// most 20 of them; "" when the dumps are the same.
func DiffDumps(a, b []string) string {
	sa, sb := map[string]bool{}, map[string]bool{}
	for _, l := range a {
		sa[l] = true
	}
	for _, l := range b {
		sb[l] = true
	}
	var d []string
	for l := range sa {
		if !sb[l] {
			d = append(d, "- "+l)
		}
	}
	for l := range sb {
		if !sa[l] {
			d = append(d, "+ "+l)
		}
	}
	sort.Strings(d)
	if len(d) > 20 {
		d = append(d[:20], fmt.Sprintf("… %d more", len(d)-20))
	}
	return strings.Join(d, "\n")
}

// SchemaVersion is the schema version of the closed file at path.
func SchemaVersion(t testing.TB, path string) uint64 {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer db.Close()
	var v uint64
	if err := db.View(func(tx *bolt.Tx) error {
		var err error
		v, _, err = cachefile.SchemaVersion(tx)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return v
}
