package admin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"

	bolt "go.etcd.io/bbolt"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer/cachefile"
	"github.com/boltinformer/boltinformer/encryption"
	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/snapshot"
)

// recordChunk is how many raw records one read transaction copies, so a
// long stream never holds a transaction that would block a writer's remap.
const recordChunk = 512

// Local answers queries from a DB open in this process. For a DB opened
// read-only (cachectl --db) it opens every store itself, choosing the Go
// type from the store's identity. For a DB a process writes, opening a
// store would rewrite its index list, so Local only reads the stores the
// owner registered with AddStore; the others are listed but not served.
type Local struct {
	db     *cachefile.DB
	ownsDB bool

	// mu guards stores.
	mu     sync.Mutex
	stores map[string]*localStore
	// keys opens sealed payloads of the stores Local opens itself (nil: none).
	keys *encryption.Keyring
}

// localStore is a store Local can read.
type localStore struct {
	store *boltstore.Store
}

var _ Reader = (*Local)(nil)

// NewLocal reads db and the given stores of it. Close does not close db.
func NewLocal(db *cachefile.DB, stores ...*boltstore.Store) *Local {
	l := &Local{db: db, stores: map[string]*localStore{}}
	for _, s := range stores {
		l.AddStore(s)
	}
	return l
}

// OpenFile opens the cache file at path read-only (a shared lock, never a
// write) and reads it. Close closes the file.
func OpenFile(path string, opts cachefile.Options) (*Local, error) {
	opts.ReadOnly = true
	db, err := cachefile.Open(path, opts)
	if err != nil {
		return nil, err
	}
	l := NewLocal(db)
	l.ownsDB = true
	return l, nil
}

// SetKeys gives Local the keys that open sealed payloads of the stores it
// opens itself (a file opened with OpenFile). Without them, reading such a
// payload is an error naming the key it needs; keys and index values stay
// readable.
func (l *Local) SetKeys(k *encryption.Keyring) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.keys = k
}

// Keys returns what SetKeys set.
func (l *Local) Keys() *encryption.Keyring {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.keys
}

// DB returns the file Local reads.
func (l *Local) DB() *cachefile.DB { return l.db }

// AddStore lets queries read s, a store of Local's DB, through the
// owner's own Store (its IndexFuncs and hot cache). A store of the same
// name replaces the previous one.
func (l *Local) AddStore(s *boltstore.Store) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stores[s.Name()] = &localStore{store: s}
}

// RemoveStore stops serving the named store.
func (l *Local) RemoveStore(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.stores, name)
}

// Close closes the file if OpenFile opened it.
func (l *Local) Close() error {
	if l.ownsDB {
		return l.db.Close()
	}
	return nil
}

// Info describes the file and its stores in one read transaction.
func (l *Local) Info(ctx context.Context) (*Info, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	info := &Info{Path: l.db.Path()}
	err := l.db.View(func(tx *bolt.Tx) error {
		fi, err := cachefile.InfoTx(tx)
		if err != nil {
			return err
		}
		info.SchemaVersion, info.CreatedAt, info.WriterVersion = fi.SchemaVersion, fi.CreatedAt, fi.WriterVersion
		info.Stores = make([]StoreInfo, 0, len(fi.Stores))
		for _, s := range fi.Stores {
			info.Stores = append(info.Stores, StoreInfo{
				Name:            s.Name,
				Identity:        s.Identity,
				ResourceVersion: s.RV,
				Relisting:       s.Relisting,
				RelistReason:    s.RelistReason,
				RelistSeen:      relistSeenTx(tx, s.Name, s.Relisting),
				Objects:         s.Objects,
				UpdatedAt:       s.UpdatedAt,
				Indexes:         s.Indexes,
				Namespaced:      namespacedTx(tx, s.Name),
				Namespaces:      namespacesTx(tx, s.Name),
				Served:          l.served(s.Name),
			})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("info %s: %w", l.db.Path(), err)
	}
	if fi, err := os.Stat(l.db.Path()); err == nil {
		info.Size = fi.Size()
	}
	return info, nil
}

func (l *Local) served(name string) bool {
	if l.db.ReadOnly() {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.stores[name]
	return ok
}

// objectsBucket returns the objects bucket of a store, or nil.
func objectsBucket(tx *bolt.Tx, store string) *bolt.Bucket {
	b, err := cachefile.StoreTx(tx, store)
	if err != nil {
		return nil
	}
	return b.Objects
}

// relistSeenTx counts the keys a relist in progress has listed so far.
func relistSeenTx(tx *bolt.Tx, store string, relisting bool) int {
	if !relisting {
		return 0
	}
	stores := tx.Bucket(cachefile.StoresBucket)
	if stores == nil {
		return 0
	}
	root := stores.Bucket([]byte(store))
	if root == nil {
		return 0
	}
	seen := root.Bucket(cachefile.SeenBucket)
	if seen == nil {
		return 0
	}
	return seen.Stats().KeyN
}

// namespacesTx lists the distinct namespaces of a store's keys, skipping
// from one namespace to the next with a seek.
func namespacesTx(tx *bolt.Tx, store string) []string {
	b := objectsBucket(tx, store)
	if b == nil {
		return nil
	}
	var out []string
	c := b.Cursor()
	for k, _ := c.First(); k != nil; {
		i := bytes.IndexByte(k, '/')
		if i < 0 {
			return nil // cluster-scoped
		}
		out = append(out, string(k[:i]))
		// '/'+1 sorts right after every key of this namespace.
		k, _ = c.Seek(append(bytes.Clone(k[:i]), '/'+1))
	}
	return out
}

// namespacedTx guesses a store's scope from its first key.
func namespacedTx(tx *bolt.Tx, store string) *bool {
	b := objectsBucket(tx, store)
	if b == nil {
		return nil
	}
	k, _ := b.Cursor().First()
	if k == nil {
		return nil
	}
	ns := bytes.IndexByte(k, '/') >= 0
	return &ns
}

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
	err := l.db.View(func(tx *bolt.Tx) error {
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

var errStop = errors.New("stop")

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
// there, else unstructured, else the typed-JSON form of an unknown type.
// Each candidate is tried on the first record.
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
	candidates = append(candidates, &unstructured.Unstructured{}, &jsonObject{})
	var firstErr error
	for _, c := range candidates {
		s, err := boltstore.New(db, si.name, boltstore.StoreOptions{Object: c, Indexers: indexers, Keys: keys})
		if err != nil {
			return nil, fmt.Errorf("open store %s: %w", si.name, err)
		}
		var first string
		err = s.ForEachKey(func(key string) error { first = key; return errStop })
		if err != nil && !errors.Is(err, errStop) {
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

func describeIdentity(id *cachefile.Identity) string {
	if id == nil || id.Kind == "" {
		return "no identity"
	}
	return schema.GroupVersionKind{Group: id.Group, Version: id.Version, Kind: id.Kind}.String()
}

// List streams the objects q selects. It reads through the store's
// streaming paths (GetByKey for a name, ByIndexFunc for an index or a
// namespace with a namespace index, ForEach otherwise), so it never holds
// the whole store; the walk is not one snapshot while a writer commits.
func (l *Local) List(ctx context.Context, q Query, fn func(*unstructured.Unstructured) error) error {
	run, err := l.prepareList(ctx, q)
	if err != nil {
		return err
	}
	return run(fn)
}

// prepareList checks q against the store (which must exist, be readable
// and have the index q names) and returns the walk, so a server can
// answer a bad query with an error status before it streams.
func (l *Local) prepareList(ctx context.Context, q Query) (func(fn func(*unstructured.Unstructured) error) error, error) {
	si, err := l.storeMeta(ctx, q.Store)
	if err != nil {
		return nil, err
	}
	cq, err := q.compile(si.identity)
	if err != nil {
		return nil, err
	}
	if cq.indexName != "" && !si.hasIndex(cq.indexName) {
		return nil, fmt.Errorf("%w: store %s has no index %q (indexes: %s)", ErrBadQuery, q.Store, cq.indexName, si.indexList())
	}
	if cq.keysOnly() {
		return func(fn func(*unstructured.Unstructured) error) error { return l.walkKeys(ctx, si, cq, fn) }, nil
	}
	s, err := l.store(si)
	if err != nil {
		return nil, err
	}
	return func(fn func(*unstructured.Unstructured) error) error {
		visit := func(obj interface{}) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			o, err := native(obj)
			if err != nil {
				return err
			}
			ok, err := cq.matches(o)
			if err != nil || !ok {
				return err
			}
			u, err := normalize(o, si.identity, q.MetadataOnly, q.ShowSecrets)
			if err != nil {
				return fmt.Errorf("store %s: %w", q.Store, err)
			}
			return fn(u)
		}
		switch {
		case q.Name != "":
			obj, ok, err := s.GetByKey(cq.key())
			if err != nil || !ok {
				return err
			}
			return visit(obj)
		case cq.indexName != "":
			return s.ByIndexFunc(cq.indexName, cq.indexValue, visit)
		case q.Namespace != "" && si.hasIndex(namespaceIndex):
			return s.ByIndexFunc(namespaceIndex, q.Namespace, visit)
		}
		return s.ForEach(visit)
	}, nil
}

// namespaceIndex is client-go's cache.NamespaceIndex.
const namespaceIndex = "namespace"

// Records streams a store's raw records, recordChunk per read transaction.
func (l *Local) Records(ctx context.Context, store string, showSecrets bool, fn func(Record) error) error {
	run, err := l.prepareRecords(ctx, store, showSecrets)
	if err != nil {
		return err
	}
	return run(fn)
}

func (l *Local) prepareRecords(ctx context.Context, store string, showSecrets bool) (func(fn func(Record) error) error, error) {
	si, err := l.storeMeta(ctx, store)
	if err != nil {
		return nil, err
	}
	if isSecretStore(si.identity) && !showSecrets {
		return nil, fmt.Errorf("%w: store %s", ErrSecretsHidden, store)
	}
	return func(fn func(Record) error) error { return l.walkRecords(ctx, store, fn) }, nil
}

func (l *Local) walkRecords(ctx context.Context, store string, fn func(Record) error) error {
	var after []byte
	for {
		var chunk []Record
		err := l.db.View(func(tx *bolt.Tx) error {
			b := objectsBucket(tx, store)
			if b == nil {
				return fmt.Errorf("%w: %q in %s", ErrStoreNotFound, store, l.db.Path())
			}
			c := b.Cursor()
			k, v := c.First()
			if after != nil {
				k, v = c.Seek(after)
				if k != nil && bytes.Equal(k, after) {
					k, v = c.Next()
				}
			}
			for ; k != nil && len(chunk) < recordChunk; k, v = c.Next() {
				chunk = append(chunk, Record{Key: string(k), Value: bytes.Clone(v)})
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, r := range chunk {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := fn(r); err != nil {
				return err
			}
		}
		if len(chunk) < recordChunk {
			return nil
		}
		after = []byte(chunk[len(chunk)-1].Key)
	}
}

// Snapshot writes a snapshot of the file in package snapshot's format
// (header, the file from one bbolt read transaction, SHA-256 trailer) to w.
func (l *Local) Snapshot(ctx context.Context, w io.Writer) (int64, error) {
	cw := &countingWriter{w: w}
	_, err := snapshot.SaveTo(ctx, l.db, cw, snapshot.SaveOptions{})
	return cw.n, err
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
