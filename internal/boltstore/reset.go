package boltstore

import (
	"fmt"

	"github.com/boltinformer/boltinformer/internal/cachefile"
)

// CheckRecords verifies the checksum and envelope of every stored record,
// without decoding a payload, a chunk per read transaction. It returns the
// first failure, wrapping cachefile.ErrCorruptRecord and naming the store
// and key. An informer runs it before resuming from the stored RV. A store
// whose records the file's open checked already (RecordsCheckedAtOpen) is
// not read again.
func (s *Store) CheckRecords() error {
	if s.db.RecordsCheckedAtOpen(string(s.name)) {
		return nil
	}
	var after []byte
	// The check parses each envelope in place (ParseRecord verifies its
	// checksum) and copies nothing out of it: a warm start runs it over
	// every record, so it allocates nothing per record.
	var view cachefile.RecordView
	for {
		n := 0
		err := s.view(func(b *cachefile.Buckets) error {
			c := b.Objects.Cursor()
			for k, v := seekAfter(c, after); k != nil && n < 4*streamChunk; k, v = c.Next() {
				if err := cachefile.ParseRecord(k, v, &view); err != nil {
					return fmt.Errorf("store %s key %q: %w", s.name, k, err)
				}
				after = append(after[:0], k...)
				n++
			}
			return nil
		})
		if err != nil || n < 4*streamChunk {
			return err
		}
	}
}

// Reset empties the store in one transaction: objects, index entries, the
// stored RV and any relist in progress; the identity and the registered
// indexes stay. The next start relists (a damaged store is rebuilt this way).
func (s *Store) Reset() error {
	s.indexMu.RLock()
	defer s.indexMu.RUnlock()
	err := s.write(nil, nil, func(b *cachefile.Buckets) error {
		if err := s.emptyTx(b); err != nil {
			return err
		}
		return s.touchTx(b)
	})
	if err != nil {
		return fmt.Errorf("store %s: reset: %w", s.name, err)
	}
	s.seen("")
	return nil
}

// emptyTx empties the store's buckets (cachefile.Buckets.Reset) and
// recreates the registered indexes, empty. The caller holds indexMu.
func (s *Store) emptyTx(b *cachefile.Buckets) error {
	if err := b.Reset(); err != nil {
		return err
	}
	for _, n := range sortedNames(s.indexers) {
		if _, err := b.CreateIndex(n); err != nil {
			return err
		}
	}
	return s.putIndexersTx(b, s.indexVersions)
}
