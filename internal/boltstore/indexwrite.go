package boltstore

import "github.com/boltinformer/boltinformer/internal/cachefile"

// updateIndexTx moves key from the old record's index values to the
// new record's. A corrupt old record (oldCorrupt) has unknown values: its
// key is then removed from every index by scanning.
func (s *Store) updateIndexTx(b *cachefile.Buckets, k []byte, old *cachefile.Record, oldCorrupt bool, rec *cachefile.Record) error {
	if oldCorrupt {
		if err := s.scrubKeyTx(b, k); err != nil {
			return err
		}
		old = nil
	}
	key := string(k)
	// Remove values the new record no longer has.
	if old != nil {
		for _, e := range old.Index {
			ib := b.Idx.Bucket([]byte(e.Name))
			if ib == nil {
				continue
			}
			keep := rec.Values(e.Name)
			for _, v := range e.Values {
				if !containsSorted(keep, v) {
					if err := ib.Delete(cachefile.IndexKey(v, key)); err != nil {
						return err
					}
				}
			}
		}
	}
	for _, e := range rec.Index {
		ib := b.Index(e.Name)
		if ib == nil {
			var err error
			if ib, err = b.CreateIndex(e.Name); err != nil {
				return err
			}
		}
		var had []string
		if old != nil {
			had = old.Values(e.Name)
		}
		for _, v := range e.Values {
			if !containsSorted(had, v) {
				if err := ib.Put(cachefile.IndexKey(v, key), nil); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (s *Store) removeIndexTx(b *cachefile.Buckets, k []byte, old *cachefile.Record) error {
	if old == nil {
		return s.scrubKeyTx(b, k)
	}
	for _, e := range old.Index {
		ib := b.Idx.Bucket([]byte(e.Name))
		if ib == nil {
			continue
		}
		for _, v := range e.Values {
			if err := ib.Delete(cachefile.IndexKey(v, string(k))); err != nil {
				return err
			}
		}
	}
	return nil
}

// scrubKeyTx removes key from every index bucket by scanning them; it
// is only used when a record is too corrupt to tell its index values.
func (s *Store) scrubKeyTx(b *cachefile.Buckets, k []byte) error {
	return b.Idx.ForEachBucket(func(name []byte) error {
		ib := b.Idx.Bucket(name)
		var doomed [][]byte
		c := ib.Cursor()
		for ik, _ := c.First(); ik != nil; ik, _ = c.Next() {
			if _, key, ok := cachefile.SplitIndexKey(ik); ok && key == string(k) {
				doomed = append(doomed, append([]byte(nil), ik...))
			}
		}
		for _, d := range doomed {
			if err := ib.Delete(d); err != nil {
				return err
			}
		}
		return nil
	})
}

func containsSorted(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
		if x > v {
			return false
		}
	}
	return false
}
