package deltafifo

import (
	"strings"
	"testing"

	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer/internal/testutil"
)

// The tests in this file check the differential tests themselves: each
// mutant is our queue with one behaviour made wrong, and the differential
// test must notice it, through the assertion named in want. A differential
// test that cannot fail proves nothing.

// queueMutant is our Queue; the types embedding it change one behaviour.
// Some change fields that NewQueue sets once: safe here, since the
// differential tests use a queue from one goroutine.
type queueMutant struct{ *Queue }

func (m queueMutant) inner() *Queue { return m.Queue }

type syncedAtOnce struct{ queueMutant }

func (syncedAtOnce) HasSynced() bool { return true }

type closeIgnored struct{ queueMutant }

func (closeIgnored) Close() {}

type replaceReversed struct{ queueMutant }

func (m replaceReversed) Replace(list []interface{}, rv string) error {
	reversed := make([]interface{}, len(list))
	for i, obj := range list {
		reversed[len(list)-1-i] = obj
	}
	return m.Queue.Replace(reversed, rv)
}

type replaceForgetsKnown struct{ queueMutant }

func (m replaceForgetsKnown) Replace(list []interface{}, rv string) error {
	saved := m.knownObjects
	m.knownObjects = newKnownStore()
	defer func() { m.knownObjects = saved }()
	return m.Queue.Replace(list, rv)
}

type resyncIgnored struct{ queueMutant }

func (resyncIgnored) Resync() error { return nil }

type bookmarkIgnored struct{ queueMutant }

func (bookmarkIgnored) Bookmark(string) error { return nil }

type deleteAsUpdate struct{ queueMutant }

func (m deleteAsUpdate) Delete(obj interface{}) error { return m.Update(obj) }

type addChangesObject struct{ queueMutant }

func (m addChangesObject) Add(obj interface{}) error {
	if o, ok := obj.(testObj); ok {
		o.Val++
		obj = o
	}
	return m.Queue.Add(obj)
}

type neverBatches struct{ queueMutant }

func (m neverBatches) PopBatch(_ cache.ProcessBatchFunc, processSingle cache.PopProcessFunc) error {
	_, err := m.Pop(processSingle)
	return err
}

// deliveryChanged alters what the consumer is handed.
type deliveryChanged struct {
	queueMutant
	delta   func(cache.Delta) cache.Delta
	initial func(bool) bool
}

func (m deliveryChanged) alter(deltas []cache.Delta, initial bool) ([]cache.Delta, bool) {
	out := make([]cache.Delta, len(deltas))
	for i, d := range deltas {
		out[i] = m.delta(d)
	}
	return out, m.initial(initial)
}

func (m deliveryChanged) Pop(process cache.PopProcessFunc) (interface{}, error) {
	return m.Queue.Pop(func(obj interface{}, initial bool) error {
		deltas, initial := m.alter(obj.(cache.Deltas), initial)
		return process(cache.Deltas(deltas), initial)
	})
}

func (m deliveryChanged) PopBatch(processBatch cache.ProcessBatchFunc, processSingle cache.PopProcessFunc) error {
	return m.Queue.PopBatch(func(deltas []cache.Delta, initial bool) error {
		return processBatch(m.alter(deltas, initial))
	}, func(obj interface{}, initial bool) error {
		deltas, initial := m.alter(obj.(cache.Deltas), initial)
		return processSingle(cache.Deltas(deltas), initial)
	})
}

func sameDelta(d cache.Delta) cache.Delta { return d }
func sameInitial(b bool) bool             { return b }

func TestQueueDifferentialCatchesMutants(t *testing.T) {
	t.Parallel()
	known, atomic := queueConfigs[0], queueConfigs[3]
	mutants := []struct {
		name     string
		cfg      queueConfig
		scripted string // a scripted run instead of random ones
		opts     func(*QueueOptions)
		wrap     func(*Queue) realFIFO
		want     string
	}{
		{name: "HasSynced true at once", cfg: known, want: "state differs",
			wrap: func(q *Queue) realFIFO { return syncedAtOnce{queueMutant{q}} }},
		{name: "Close ignored", cfg: atomic, want: "state differs",
			wrap: func(q *Queue) realFIFO { return closeIgnored{queueMutant{q}} }},
		{name: "Bookmark ignored", cfg: atomic, want: "state differs",
			wrap: func(q *Queue) realFIFO { return bookmarkIgnored{queueMutant{q}} }},
		{name: "Replace reverses its list", cfg: known, want: "queued deltas differ",
			wrap: func(q *Queue) realFIFO { return replaceReversed{queueMutant{q}} }},
		{name: "Replace forgets KnownObjects", cfg: known, want: "differ",
			wrap: func(q *Queue) realFIFO { return replaceForgetsKnown{queueMutant{q}} }},
		{name: "Resync ignored", cfg: known, want: "differ",
			wrap: func(q *Queue) realFIFO { return resyncIgnored{queueMutant{q}} }},
		{name: "atomic Resync ignored", cfg: atomic, want: "differ",
			wrap: func(q *Queue) realFIFO { return resyncIgnored{queueMutant{q}} }},
		{name: "Delete enqueues Updated", cfg: known, want: "differ",
			wrap: func(q *Queue) realFIFO { return deleteAsUpdate{queueMutant{q}} }},
		{name: "Add changes the object", cfg: atomic, want: "differ",
			wrap: func(q *Queue) realFIFO { return addChangesObject{queueMutant{q}} }},
		{name: "PopBatch never batches", cfg: known, want: "results differ",
			wrap: func(q *Queue) realFIFO { return neverBatches{queueMutant{q}} }},
		{name: "isInInitialList always false", cfg: known, want: "results differ",
			wrap: func(q *Queue) realFIFO {
				return deliveryChanged{queueMutant{q}, sameDelta, func(bool) bool { return false }}
			}},
		{name: "tombstones lose their object", cfg: known, want: "results differ",
			wrap: func(q *Queue) realFIFO {
				return deliveryChanged{queueMutant{q}, func(d cache.Delta) cache.Delta {
					if t, ok := d.Object.(cache.DeletedFinalStateUnknown); ok {
						d.Object = cache.DeletedFinalStateUnknown{Key: t.Key}
					}
					return d
				}, sameInitial}
			}},
		{name: "Sync objects transformed", cfg: known, want: "results differ",
			wrap: func(q *Queue) realFIFO {
				return deliveryChanged{queueMutant{q}, func(d cache.Delta) cache.Delta {
					if d.Type == cache.Sync {
						d.Object, _ = testTransform(d.Object)
					}
					return d
				}, sameInitial}
			}},
		{name: "batch size 999", cfg: known, scripted: "long bursts", want: "results differ",
			opts: func(o *QueueOptions) { o.BatchSize = 999 }},
	}
	for _, m := range mutants {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			newOurs := func(opts QueueOptions) realFIFO {
				if m.opts != nil {
					m.opts(&opts)
				}
				q := NewQueue(opts)
				if m.wrap == nil {
					return q
				}
				return m.wrap(q)
			}
			var err error
			if m.scripted != "" {
				err = runQueueDifferential(testutil.Logger(t), m.cfg, scriptedQueueRuns()[m.scripted], newKnownStore(), newOurs)
			} else {
				for seed := uint64(1); seed <= 8 && err == nil; seed++ {
					gen := newOpGen(seed, genConfig{ops: 3000, keys: 12, transformErrs: m.cfg.transform, batches: true, bookmarks: true})
					err = runQueueDifferential(testutil.Logger(t), m.cfg, gen.sequence(), initialKnown(seed, 12), newOurs)
				}
			}
			switch {
			case err == nil:
				t.Fatal("the differential test did not notice")
			case !strings.Contains(err.Error(), m.want):
				t.Fatalf("noticed, but not as %q: %v", m.want, err)
			}
			t.Logf("noticed: %.200s", err)
		})
	}
}
