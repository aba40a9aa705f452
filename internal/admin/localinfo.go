package admin

import (
	"bytes"
	"context"
	"fmt"
	"os"

	bolt "go.etcd.io/bbolt"

	"github.com/boltinformer/boltinformer/internal/cachefile"
)

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
