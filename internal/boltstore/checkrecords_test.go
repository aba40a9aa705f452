package boltstore_test

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/boltstore/boltstoretest"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// TestCheckRecordsHoldsNoPerRecordState checks that the warm start's scan
// of every record's checksum allocates no more for a large store than for
// a small one: it parses each envelope in place and copies nothing out,
// so a store of a million objects costs it no heap per object.
func TestCheckRecordsHoldsNoPerRecordState(t *testing.T) {
	allocs := func(n int) float64 {
		s := boltstoretest.Open(t, "pods", podOpts())
		var ops []boltstore.Op
		for i := 0; i < n; i++ {
			ops = append(ops, boltstore.Op{Type: boltstore.OpUpsert, Obj: testutil.Pod("ns", fmt.Sprintf("p%05d", i), strconv.Itoa(i+1))})
		}
		if _, err := s.Apply(ops, strconv.Itoa(n)); err != nil {
			t.Fatal(err)
		}
		return testing.AllocsPerRun(3, func() {
			if err := s.CheckRecords(); err != nil {
				t.Fatal(err)
			}
		})
	}
	// 1,000 records take one read transaction, as 100 do (4*streamChunk
	// per transaction): the allocations must not grow with the records.
	small, large := allocs(100), allocs(1000)
	if large > small+10 {
		t.Errorf("CheckRecords allocates %.0f times over 1,000 records and %.0f over 100: it allocates per record", large, small)
	}
}
