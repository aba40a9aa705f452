package boltstore

import (
	"fmt"

	"github.com/boltinformer/boltinformer/internal/cachefile"
)

// ClusterReport says what SetCluster did.
type ClusterReport struct {
	// Previous is the cluster the store recorded before ("" if none).
	Previous string
	// Reset is true when Previous was another cluster: the store was
	// emptied (objects, indexes, RV, relist state) in the same transaction.
	Reset bool
}

// Cluster returns the identity of the cluster the stored RV belongs to, ""
// if none was recorded.
func (s *Store) Cluster() (string, error) {
	var id string
	err := s.view(func(b *cachefile.Buckets) error {
		id = string(b.State.Get(cachefile.StateCluster))
		return nil
	})
	return id, err
}

// SetCluster records id as the cluster the store's RV belongs to, in one
// write transaction. A store that recorded another cluster is emptied first
// in that transaction: its RV and objects mean nothing on this one, and the
// informer must relist (docs/design.md, invariant 8). A store that recorded no
// cluster (written before identities were kept, or by an informer given
// none) keeps its contents and adopts id: only the resume check against the
// cluster's current RV protects that first start.
func (s *Store) SetCluster(id string) (ClusterReport, error) {
	var rep ClusterReport
	if id == "" {
		return rep, fmt.Errorf("store %s: %w", s.name, ErrNoClusterID)
	}
	s.indexMu.RLock()
	defer s.indexMu.RUnlock()
	err := s.write(nil, nil, func(b *cachefile.Buckets) error {
		rep = ClusterReport{Previous: string(b.State.Get(cachefile.StateCluster))}
		if rep.Previous == id {
			return nil
		}
		if rep.Previous != "" {
			rep.Reset = true
			if err := s.emptyTx(b); err != nil {
				return err
			}
		}
		if err := b.State.Put(cachefile.StateCluster, []byte(id)); err != nil {
			return err
		}
		return s.touchTx(b)
	})
	if err != nil {
		return ClusterReport{}, fmt.Errorf("store %s: set cluster %q: %w", s.name, id, err)
	}
	if rep.Reset {
		s.seen("")
	}
	return rep, nil
}
