package boltinformer_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/deltafifo"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// TestRelistCommitsAPageAtATime checks that a popped batch of relist items
// larger than PageSize is committed a page at a time (the relist's heap
// stays at a few pages), while watch events are committed up to BatchSize
// together.
func TestRelistCommitsAPageAtATime(t *testing.T) {
	reg := prometheus.NewRegistry()
	c, err := boltinformer.Open(filepath.Join(t.TempDir(), "c.db"), boltinformer.Options{Logger: testutil.Logger(t), NoSync: true, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	})
	inf, err := c.NewInformer(newSource(t), &v1.Pod{}, boltinformer.InformerOptions{PageSize: 10, BatchSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	items := func(typ cache.DeltaType, n, rv int) []cache.Delta {
		ds := make([]cache.Delta, n)
		for i := range ds {
			ds[i] = cache.Delta{Type: typ, Object: testutil.Pod("ns", fmt.Sprintf("p%03d", i), strconv.Itoa(rv+i))}
		}
		return ds
	}
	relist := append([]cache.Delta{{Type: deltafifo.ListStart, Object: deltafifo.ListStartInfo{Reason: "test"}}}, items(cache.Replaced, 25, 1)...)
	if err := inf.HandleForTest(context.Background(), relist); err != nil {
		t.Fatal(err)
	}
	// Commits of 10, 10 and 5 deltas.
	if got, want := commitBatches(t, reg), (batches{commits: 3, deltas: 25, upTo16: 3}); got != want {
		t.Fatalf("relist of 25 items with PageSize 10: %+v, want %+v", got, want)
	}
	if err := inf.HandleForTest(context.Background(), items(cache.Updated, 25, 100)); err != nil {
		t.Fatal(err)
	}
	// One more commit, of 25.
	if got, want := commitBatches(t, reg), (batches{commits: 4, deltas: 50, upTo16: 3}); got != want {
		t.Fatalf("then 25 watch events with BatchSize 100: %+v, want %+v", got, want)
	}
}

// batches sums boltinformer_commit_batch_deltas: how many commits, how many
// deltas they applied, and how many commits applied at most 16.
type batches struct {
	commits, deltas, upTo16 uint64
}

func commitBatches(t *testing.T, reg *prometheus.Registry) batches {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "boltinformer_commit_batch_deltas" {
			continue
		}
		h := mf.GetMetric()[0].GetHistogram()
		b := batches{commits: h.GetSampleCount(), deltas: uint64(h.GetSampleSum())}
		for _, bk := range h.GetBucket() {
			if bk.GetUpperBound() == 16 {
				b.upTo16 = bk.GetCumulativeCount()
			}
		}
		return b
	}
	t.Fatal("no boltinformer_commit_batch_deltas")
	return batches{}
}
