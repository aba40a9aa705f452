package admin

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"sync"

	bolt "go.etcd.io/bbolt"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	publicfile "github.com/boltinformer/boltinformer/cachefile"
	"github.com/boltinformer/boltinformer/encryption"
	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/snapshot"
)

// recordChunk is how many raw records one read transaction copies, so a
// long stream never holds a transaction that would block a writer's remap.
const recordChunk = 512

// releaseEvery is how many objects a walk reads between two releases of
// the file's mapped pages (cachefile.DB.ReleaseMapped): reading every
// object of a 1 GB file would otherwise leave all of it in the reader's
// RSS, which a container's memory limit counts.
const releaseEvery = 256

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
// from one namespace to the next with a seek: in the store's namespace
// index when it has one, whose entries are small, else in its objects.
// Each seek maps a page (with the kernel's fault-around, its neighbours
// too) into the reader's RSS, so the pages are released every
// releaseEvery/16 namespaces: cachectl get NAME reads this first.
func namespacesTx(tx *bolt.Tx, store string) []string {
	b, err := cachefile.StoreTx(tx, store)
	if err != nil {
		return nil
	}
	c := b.Objects.Cursor()
	k, _ := c.First()
	if k == nil || bytes.IndexByte(k, '/') < 0 {
		return nil // empty, or cluster-scoped
	}
	var out []string
	release := func() error {
		if len(out)%(releaseEvery/16) == 0 {
			return cachefile.ReleaseMappedTx(tx)
		}
		return nil
	}
	if ib := b.Index(namespaceIndex); ib != nil {
		err := cachefile.CountValuesTx(ib, func(ns string) error {
			if ns == "" {
				return nil
			}
			out = append(out, ns)
			return release()
		})
		if err == nil && len(out) > 0 {
			return out
		}
		out = nil
	}
	for k != nil {
		i := bytes.IndexByte(k, '/')
		if i < 0 {
			return nil // cluster-scoped
		}
		out = append(out, string(k[:i]))
		if release() != nil {
			return nil
		}
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

// ListObjects streams the objects q selects as List does, but as the
// store decoded them, without List's JSON round trip: a built-in type's Go
// object (kind and apiVersion may be unset) or, for a type this build does
// not know, an Unstructured. Secrets are redacted unless q.ShowSecrets, as
// in List (a redacted Secret is a copy), and with q.MetadataOnly the
// objects are List's metadata-only ones. The objects may be shared with
// the store's hot-object cache: fn must not modify them. It is for callers
// in this process, such as cachectl's tables, which read a few fields of
// many objects; what crosses the admin socket is List's form.
func (l *Local) ListObjects(ctx context.Context, q Query, fn func(runtime.Object) error) error {
	si, cq, walk, err := l.prepareWalk(ctx, q)
	if err != nil {
		return err
	}
	if walk == nil {
		return l.walkKeys(ctx, si, cq, func(u *unstructured.Unstructured) error { return fn(u) })
	}
	switch {
	case q.MetadataOnly:
		return walk(func(o runtime.Object) error {
			u, err := normalize(o, si.identity, true, q.ShowSecrets)
			if err != nil {
				return fmt.Errorf("store %s: %w", q.Store, err)
			}
			return fn(u)
		})
	case !q.ShowSecrets:
		secretStore := isSecretStore(si.identity)
		return walk(func(o runtime.Object) error { return fn(redacted(o, secretStore)) })
	}
	return walk(fn)
}

// compile reads the metadata of the store q names and compiles q for its
// type.
func (l *Local) compile(ctx context.Context, q Query) (storeMeta, *compiledQuery, error) {
	si, err := l.storeMeta(ctx, q.Store)
	if err != nil {
		return si, nil, err
	}
	cq, err := q.compile(si.identity)
	return si, cq, err
}

// prepareList checks q against the store (which must exist, be readable
// and have the index q names) and returns the walk, so a server can
// answer a bad query with an error status before it streams.
func (l *Local) prepareList(ctx context.Context, q Query) (func(fn func(*unstructured.Unstructured) error) error, error) {
	si, cq, walk, err := l.prepareWalk(ctx, q)
	if err != nil {
		return nil, err
	}
	if walk == nil {
		return func(fn func(*unstructured.Unstructured) error) error { return l.walkKeys(ctx, si, cq, fn) }, nil
	}
	return func(fn func(*unstructured.Unstructured) error) error {
		n := newNormalizer(si.identity, q, fn)
		if err := walk(n.add); err != nil {
			return err
		}
		return n.flush()
	}, nil
}

// prepareWalk checks q as prepareList does and returns the walk over the
// decoded objects q selects, or a nil walk when q reads keys only
// (walkKeys).
func (l *Local) prepareWalk(ctx context.Context, q Query) (storeMeta, *compiledQuery, func(visit func(runtime.Object) error) error, error) {
	si, cq, err := l.compile(ctx, q)
	if err != nil {
		return si, nil, nil, err
	}
	if cq.indexName != "" && !si.hasIndex(cq.indexName) {
		return si, nil, nil, fmt.Errorf("%w: store %s has no index %q (indexes: %s)", ErrBadQuery, q.Store, cq.indexName, si.indexList())
	}
	// Keys tell the kind only from an identity that names it (not a
	// dynamic or metadata informer's): other stores decode.
	if cq.keysOnly() && si.identity != nil && si.identity.Kind != "" {
		return si, cq, nil, nil
	}
	s, err := l.store(si)
	if err != nil {
		return si, nil, nil, err
	}
	return si, cq, func(fn func(runtime.Object) error) error {
		read := 0
		visit := func(obj interface{}) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			if read++; read%releaseEvery == 0 {
				if err := l.db.ReleaseMapped(); err != nil {
					return err
				}
			}
			o, err := native(obj)
			if err != nil {
				return err
			}
			ok, err := cq.matches(o)
			if err != nil || !ok {
				return err
			}
			return fn(o)
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
		default:
			return s.ForEach(visit)
		}
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
		if err := l.db.ReleaseMapped(); err != nil {
			return err
		}
		after = []byte(chunk[len(chunk)-1].Key)
	}
}

// Snapshot writes a snapshot of the file in package snapshot's format
// (header, the file from one bbolt read transaction, SHA-256 trailer) to w.
func (l *Local) Snapshot(ctx context.Context, w io.Writer) (int64, error) {
	cw := &countingWriter{w: w}
	_, err := snapshot.SaveTo(ctx, (*publicfile.File)(l.db), cw, snapshot.SaveOptions{})
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
