package admin

import (
	"context"
	"fmt"
	"os"

	bolt "go.etcd.io/bbolt"

	"github.com/boltinformer/boltinformer/internal/cachefile"
)

// BriefInfo is Info without what reads a store's indexes: each store's
// Indexes names its indexes with a count of -1, and Namespaces is empty.
// It reads the meta bucket and each store's state and first key, so on a
// file opened with ValidateLazily it validates those pages only: a point
// read (cachectl get NAME) of a large file starts with it.
func (l *Local) BriefInfo(ctx context.Context) (*Info, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	info := &Info{Path: l.db.Path()}
	var names []string
	err := l.db.ViewLookups(cachefile.FileLookups(), func(tx *bolt.Tx) error {
		meta := tx.Bucket(cachefile.MetaBucket)
		if meta == nil {
			return fmt.Errorf("%w: no meta bucket", cachefile.ErrCorruptFile)
		}
		fmt.Sscan(string(meta.Get(cachefile.MetaSchemaVersion)), &info.SchemaVersion)
		info.CreatedAt = string(meta.Get(cachefile.MetaCreatedAt))
		info.WriterVersion = string(meta.Get(cachefile.MetaWriterVersion))
		stores := tx.Bucket(cachefile.StoresBucket)
		if stores == nil {
			return fmt.Errorf("%w: no stores bucket", cachefile.ErrCorruptFile)
		}
		return stores.ForEachBucket(func(name []byte) error {
			names = append(names, string(name))
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("info %s: %w", l.db.Path(), err)
	}
	var lookups []cachefile.Lookup
	for _, n := range names {
		lookups = append(append(lookups, cachefile.StoreLookups(n)...), cachefile.FirstObjectLookup(n))
	}
	err = l.db.ViewLookups(lookups, func(tx *bolt.Tx) error {
		info.Stores = make([]StoreInfo, 0, len(names))
		for _, n := range names {
			b, err := cachefile.StoreTx(tx, n)
			if err != nil {
				return err
			}
			s, err := cachefile.StoreStateTx(b)
			if err != nil {
				return err
			}
			info.Stores = append(info.Stores, StoreInfo{
				Name:            s.Name,
				Identity:        s.Identity,
				ResourceVersion: s.RV,
				Relisting:       s.Relisting,
				RelistReason:    s.RelistReason,
				Objects:         s.Objects,
				UpdatedAt:       s.UpdatedAt,
				Indexes:         s.Indexes,
				Namespaced:      namespacedTx(tx, s.Name),
				Served:          l.served(s.Name),
			})
		}
		return nil
	})
	relisting := false
	for _, s := range info.Stores {
		relisting = relisting || s.Relisting
	}
	if err == nil && relisting {
		// A relist's progress counts its seen bucket: a read of the whole
		// bucket, which no lookup covers.
		err = l.db.View(func(tx *bolt.Tx) error {
			for i := range info.Stores {
				if s := &info.Stores[i]; s.Relisting {
					s.RelistSeen = relistSeenTx(tx, s.Name, true)
				}
			}
			return nil
		})
	}
	if err != nil {
		return nil, fmt.Errorf("info %s: %w", l.db.Path(), err)
	}
	if fi, err := os.Stat(l.db.Path()); err == nil {
		info.Size = fi.Size()
	}
	return info, nil
}
