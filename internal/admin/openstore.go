package admin

// What a query needs to know about a store, and opening a store of a
// read-only DB with the Go type its records decode as.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	bolt "go.etcd.io/bbolt"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer/encryption"
	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/cachefile"
)

// storeMeta is what a query needs to know about a store.
type storeMeta struct {
	name     string
	identity *cachefile.Identity
	indexes  []string
}

func (m storeMeta) hasIndex(name string) bool {
	for _, n := range m.indexes {
		if n == name {
			return true
		}
	}
	return false
}

func (m storeMeta) indexList() string {
	if len(m.indexes) == 0 {
		return "none"
	}
	return strings.Join(m.indexes, ", ")
}

// storeMeta reads one store's identity and index names (not Info, which
// counts objects and index values).
func (l *Local) storeMeta(ctx context.Context, name string) (storeMeta, error) {
	m := storeMeta{name: name}
	if err := ctx.Err(); err != nil {
		return m, err
	}
	err := l.db.ViewLookups(cachefile.StoreLookups(name), func(tx *bolt.Tx) error {
		b, err := cachefile.StoreTx(tx, name)
		if errors.Is(err, cachefile.ErrNoStore) {
			return fmt.Errorf("%w: %q in %s", ErrStoreNotFound, name, l.db.Path())
		}
		if err != nil {
			return err
		}
		if m.identity, err = cachefile.ReadIdentityTx(b); err != nil {
			return err
		}
		return b.Idx.ForEachBucket(func(k []byte) error {
			m.indexes = append(m.indexes, string(k))
			return nil
		})
	})
	sort.Strings(m.indexes)
	return m, err
}

// store returns a readable Store for si, opening it on a read-only DB.
func (l *Local) store(si storeMeta) (*boltstore.Store, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ls, ok := l.stores[si.name]; ok {
		return ls.store, nil
	}
	if !l.db.ReadOnly() {
		return nil, fmt.Errorf("%w: %q (the owning process has not registered it)", ErrStoreNotServed, si.name)
	}
	s, err := probeStore(l.db, si, nil, l.keys)
	if err != nil {
		return nil, err
	}
	l.stores[si.name] = &localStore{store: s}
	return s, nil
}

// OpenStore opens the named store of a read-only DB with the Go type its
// records decode as (see probeStore), registering indexers (stored indexes
// without a function stay readable by name). cachectl check uses it to
// Verify a store with the IndexFuncs it knows.
func OpenStore(ctx context.Context, db *cachefile.DB, name string, indexers cache.Indexers, keys *encryption.Keyring) (*boltstore.Store, error) {
	if !db.ReadOnly() {
		// New on a writable DB would rewrite the store's index list.
		return nil, fmt.Errorf("open store %s: OpenStore needs a DB opened read-only", name)
	}
	si, err := NewLocal(db).storeMeta(ctx, name)
	if err != nil {
		return nil, err
	}
	return probeStore(db, si, indexers, keys)
}

// probeStore opens a store of a read-only DB with the Go type its records
// decode as: the identity's type from client-go's scheme when it is known
// there, else unstructured, else the typed-JSON form of an unknown type,
// else metadata-only (a metadata informer's store, whose identity has no
// kind). Each candidate is tried on the first record.
// A sealed first record that does not open is that error (it names the
// key), not a wrong type.
func probeStore(db *cachefile.DB, si storeMeta, indexers cache.Indexers, keys *encryption.Keyring) (*boltstore.Store, error) {
	var candidates []runtime.Object
	if id := si.identity; id != nil && id.Kind != "" {
		gvk := schema.GroupVersionKind{Group: id.Group, Version: id.Version, Kind: id.Kind}
		if obj, err := scheme.Scheme.New(gvk); err == nil {
			candidates = append(candidates, obj)
		}
	}
	// Metadata-only comes last: any protobuf record decodes as one.
	candidates = append(candidates, &unstructured.Unstructured{}, &jsonObject{}, &metav1.PartialObjectMetadata{})
	var firstErr error
	for _, c := range candidates {
		s, err := boltstore.New(db, si.name, boltstore.StoreOptions{Object: c, Indexers: indexers, Keys: keys})
		if err != nil {
			return nil, fmt.Errorf("open store %s: %w", si.name, err)
		}
		first, err := firstKey(db, si.name)
		if err != nil {
			return nil, fmt.Errorf("store %s: %w", si.name, err)
		}
		if first == "" {
			return s, nil // empty: any type reads it
		}
		if _, _, err := s.GetByKey(first); err != nil {
			if errors.Is(err, boltstore.ErrEncrypted) {
				return nil, err
			}
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		return s, nil
	}
	return nil, fmt.Errorf("%w: store %s (%s): %v", ErrUnknownType, si.name, describeIdentity(si.identity), firstErr)
}

// firstKey returns the first object key of store name ("" when it holds
// none), reading one page of the file.
func firstKey(db *cachefile.DB, name string) (string, error) {
	var first string
	err := db.ViewLookups([]cachefile.Lookup{cachefile.FirstObjectLookup(name)}, func(tx *bolt.Tx) error {
		b, err := cachefile.ObjectsTx(tx, []byte(name))
		if err != nil {
			return err
		}
		k, _ := b.Cursor().First()
		first = string(k)
		return nil
	})
	return first, err
}

func describeIdentity(id *cachefile.Identity) string {
	switch {
	case id != nil && id.Kind != "":
		return schema.GroupVersionKind{Group: id.Group, Version: id.Version, Kind: id.Kind}.String()
	case id != nil && id.Resource != "":
		return "resource " + schema.GroupResource{Group: id.Group, Resource: id.Resource}.String()
	}
	return "no identity"
}
