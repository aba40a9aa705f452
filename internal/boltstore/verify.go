package boltstore

import (
	"fmt"
	"reflect"

	"github.com/boltinformer/boltinformer/internal/cachefile"
)

// Verify checks the store as cachefile.CheckTx does and also decodes every
// payload and re-runs the registered IndexFuncs, comparing their values with
// the stored ones (docs/design.md, invariant 4). It returns an error wrapping
// ErrInconsistent that lists the first problem. It reads every record in
// one read transaction and gives the file's pages back every
// verifyReleaseEvery records (cachefile.ReleaseMappedTx), so a check of a
// large file does not keep it all in the process's RSS.
func (s *Store) Verify() error {
	s.indexMu.RLock()
	defer s.indexMu.RUnlock()
	c := cachefile.NewChecker(100)
	err := s.view(func(b *cachefile.Buckets) error {
		c.Store(b)
		n := 0
		return b.Objects.ForEach(func(k, v []byte) error {
			if c.Full() {
				return nil
			}
			if n++; n%verifyReleaseEvery == 0 {
				if err := cachefile.ReleaseMappedTx(b.Objects.Tx()); err != nil {
					return err
				}
			}
			rec, err := cachefile.DecodeRecord(k, v)
			if err != nil {
				return nil // reported by Store
			}
			obj, err := s.codec.decode(string(k), rec)
			if err != nil {
				c.Add(cachefile.Problem{Store: b.Name, Key: string(k), What: err.Error()})
				return nil
			}
			if key, err := s.keyFunc(obj); err != nil || key != string(k) {
				c.Add(cachefile.Problem{Store: b.Name, Key: string(k), What: fmt.Sprintf("object's key is %q (%v)", key, err)})
			}
			for n, f := range s.indexers {
				want, err := computeIndex(n, f, obj)
				if err != nil {
					want = []string{"<" + err.Error() + ">"}
				}
				if got := rec.Values(n); !reflect.DeepEqual(nonNil(got), nonNil(want)) || !rec.HasIndex(n) {
					c.Add(cachefile.Problem{Store: b.Name, Key: string(k), What: fmt.Sprintf("index %q: stored values %q, IndexFunc gives %q", n, got, want)})
				}
			}
			return nil
		})
	})
	if err != nil {
		return err
	}
	if ps := c.Problems(); len(ps) > 0 {
		return fmt.Errorf("%w: %d problem(s), first: %s", ErrInconsistent, len(ps), ps[0])
	}
	return nil
}

// verifyReleaseEvery is how many records Verify reads between two
// releases of the file's pages (as admin's List does).
const verifyReleaseEvery = 256

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
