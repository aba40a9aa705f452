package deltafifo

import (
	"fmt"
	"slices"
	"testing"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/boltinformer/boltinformer/internal/testutil"
)

// realFIFO is the API shared by cache.RealFIFO and Queue that the
// differential test drives.
type realFIFO interface {
	cache.QueueWithBatch
	cache.ReflectorBookmarkStore
	IsClosed() bool
}

// queueConfig is one way of configuring both queues.
type queueConfig struct {
	name      string
	atomic    bool // AtomicEvents (then no KnownObjects)
	unlock    bool // UnlockWhileProcessing
	bookmarks bool // EmitDeltaTypeBookmark
	transform bool // Transformer
}

var queueConfigs = []queueConfig{
	{name: "known"},
	{name: "known+transform", transform: true},
	{name: "atomic", atomic: true},
	{name: "atomic+bookmarks+transform", atomic: true, bookmarks: true, transform: true},
	{name: "atomic+bookmarks+unlock", atomic: true, bookmarks: true, unlock: true},
}

func (c queueConfig) transformer() cache.TransformFunc {
	if c.transform {
		return testTransform
	}
	return nil
}

func (c queueConfig) knownObjects(known *knownStore) cache.KeyListerGetter {
	if c.atomic {
		return nil
	}
	return known
}

func (c queueConfig) newRef(known *knownStore, logger klog.Logger) realFIFO {
	return cache.NewRealFIFOWithOptions(cache.RealFIFOOptions{
		Logger:                &logger,
		KeyFunction:           testKeyFunc,
		KnownObjects:          c.knownObjects(known),
		Transformer:           c.transformer(),
		AtomicEvents:          c.atomic,
		UnlockWhileProcessing: c.unlock,
		EmitDeltaTypeBookmark: c.bookmarks,
	})
}

func (c queueConfig) options(known *knownStore, logger klog.Logger) QueueOptions {
	return QueueOptions{
		Logger:                &logger,
		KeyFunction:           testKeyFunc,
		KnownObjects:          c.knownObjects(known),
		Transformer:           c.transformer(),
		AtomicEvents:          c.atomic,
		UnlockWhileProcessing: c.unlock,
		EmitDeltaTypeBookmark: c.bookmarks,
	}
}

func newOurQueue(opts QueueOptions) realFIFO { return NewQueue(opts) }

// popRecord is what the consumer saw in one call of a processing function.
type popRecord struct {
	Func        string // "Pop", "PopBatch/batch" or "PopBatch/single"
	Deltas      []cache.Delta
	InitialList bool
	// SyncedMeanwhile is HasSynced as seen from inside the processing
	// function; only probed when the queue is unlocked while processing.
	SyncedMeanwhile bool
}

// stepResult is everything an operation returned or made the consumer see.
type stepResult struct {
	Err      string
	Returned interface{}
	Pops     []popRecord
}

func (r stepResult) equal(o stepResult) bool {
	if r.Err != o.Err || !slices.EqualFunc(r.Pops, o.Pops, popRecord.equal) {
		return false
	}
	rd, rok := r.Returned.(cache.Deltas)
	od, ook := o.Returned.(cache.Deltas)
	if rok || ook {
		return rok && ook && deltasEqual(rd, od)
	}
	return r.Returned == nil && o.Returned == nil
}

func (p popRecord) equal(o popRecord) bool {
	return p.Func == o.Func && p.InitialList == o.InitialList &&
		p.SyncedMeanwhile == o.SyncedMeanwhile && deltasEqual(p.Deltas, o.Deltas)
}

// realSide is one of the two queues under comparison, with its consumer.
type realSide struct {
	fifo  realFIFO
	known *knownStore
	items func() []cache.Delta // the queued Deltas, read without locking
	probe bool                 // probe HasSynced while processing
	pops  []popRecord
}

func (s *realSide) process(name string, fail bool) cache.PopProcessFunc {
	return func(obj interface{}, isInInitialList bool) error {
		return s.consume(name, obj.(cache.Deltas), isInInitialList, fail)
	}
}

func (s *realSide) processBatch(fail bool) cache.ProcessBatchFunc {
	return func(deltas []cache.Delta, isInInitialList bool) error {
		return s.consume("PopBatch/batch", deltas, isInInitialList, fail)
	}
}

// consume records what was popped and applies it to KnownObjects, as an
// informer's process function does.
func (s *realSide) consume(name string, deltas []cache.Delta, isInInitialList, fail bool) error {
	rec := popRecord{Func: name, Deltas: slices.Clone(deltas), InitialList: isInInitialList}
	if s.probe {
		rec.SyncedMeanwhile = s.fifo.HasSynced()
	}
	s.pops = append(s.pops, rec)
	for _, d := range deltas {
		s.known.apply(d)
	}
	if fail {
		return errProcess
	}
	return nil
}

func (s *realSide) apply(o op) stepResult {
	s.pops = nil
	var err error
	var ret interface{}
	switch o.kind {
	case opAdd:
		err = s.fifo.Add(o.obj)
	case opUpdate:
		err = s.fifo.Update(o.obj)
	case opDelete:
		err = s.fifo.Delete(o.obj)
	case opReplace:
		err = s.fifo.Replace(slices.Clone(o.list), o.rv)
	case opResync:
		err = s.fifo.Resync()
	case opBookmark:
		err = s.fifo.Bookmark(o.rv)
	case opPop:
		ret, err = s.fifo.Pop(s.process("Pop", o.fail))
	case opPopBatch:
		err = s.fifo.PopBatch(s.processBatch(o.fail), s.process("PopBatch/single", o.fail))
	case opPhantom:
		s.known.phantoms[o.key] = o.err
	case opClose:
		s.fifo.Close()
	case opBreak:
		o.broken.broken = true
	}
	return stepResult{Err: errClass(err), Returned: ret, Pops: s.pops}
}

// state is what is compared between the queues after every step.
type realState struct {
	Len       int
	HasSynced bool
	Done      bool
	Closed    bool
}

func (s *realSide) state() realState {
	return realState{
		Len:       len(s.items()),
		HasSynced: s.fifo.HasSynced(),
		Done:      cache.IsDone(s.fifo.HasSyncedChecker()),
		Closed:    s.fifo.IsClosed(),
	}
}

// runQueueDifferential applies ops to client-go's RealFIFO and to the queue
// newOurs makes, both configured by cfg with the same initial
// KnownObjects, and returns the first difference in what they return, what
// their consumers see, what they hold, or what HasSynced says. It ends by
// closing and draining both. Both queues log to logger.
func runQueueDifferential(logger klog.Logger, cfg queueConfig, ops []op, initial *knownStore, newOurs func(QueueOptions) realFIFO) error {
	refKnown, ourKnown := initial.clone(), initial.clone()
	ref := &realSide{fifo: cfg.newRef(refKnown, logger), known: refKnown, probe: cfg.unlock}
	refItems := unexportedField[[]cache.Delta](ref.fifo, "items")
	ref.items = func() []cache.Delta { return *refItems }
	ours := &realSide{fifo: newOurs(cfg.options(ourKnown, logger)), known: ourKnown, probe: cfg.unlock}
	ours.items = func() []cache.Delta { return queueOf(ours.fifo).items }
	sides := []*realSide{ref, ours}

	check := func(i int, o op, full bool) error {
		if rs, os := ref.state(), ours.state(); rs != os {
			return fmt.Errorf("after step %d %v: state differs:\nclient-go: %+v\nours:      %+v%s", i, o, rs, os, history(ops, i))
		}
		if full && !deltasEqual(ref.items(), ours.items()) {
			return fmt.Errorf("after step %d %v: queued deltas differ:\nclient-go: %+v\nours:      %+v%s", i, o, ref.items(), ours.items(), history(ops, i))
		}
		if knownChecked(o) && !ref.known.equal(ours.known) {
			return fmt.Errorf("after step %d %v: known objects differ:\nclient-go: %+v\nours:      %+v%s", i, o, ref.known, ours.known, history(ops, i))
		}
		return nil
	}
	step := func(i int, o op) error {
		if (o.kind == opPop || o.kind == opPopBatch) && len(ours.items()) == 0 && !ours.fifo.IsClosed() {
			return nil // both empty (checked before): Pop would block
		}
		var res [2]stepResult
		for j, s := range sides {
			res[j] = s.apply(o)
		}
		if !res[0].equal(res[1]) {
			return fmt.Errorf("step %d %v: results differ:\nclient-go: %+v\nours:      %+v%s", i, o, res[0], res[1], history(ops, i))
		}
		return check(i, o, fullCheck(i, o, len(ours.items())))
	}

	for i, o := range ops {
		if err := step(i, o); err != nil {
			return err
		}
	}
	// Close and drain: what is left must come out the same, then ErrClosed.
	ops = append(ops, op{kind: opClose})
	if err := step(len(ops)-1, ops[len(ops)-1]); err != nil {
		return err
	}
	for n := 0; ; n++ {
		kind := opPop
		if n%2 == 0 {
			kind = opPopBatch
		}
		ops = append(ops, op{kind: kind})
		empty := len(ours.items()) == 0
		if err := step(len(ops)-1, ops[len(ops)-1]); err != nil {
			return err
		}
		if empty {
			return nil
		}
	}
}

// queueOf finds our Queue in a realFIFO, which may be a wrapper around it.
func queueOf(f realFIFO) *Queue {
	switch q := f.(type) {
	case *Queue:
		return q
	case interface{ inner() *Queue }:
		return q.inner()
	}
	panic(fmt.Sprintf("no Queue in %T", f))
}

// initialKnown is the KnownObjects a run starts with: empty for half the
// seeds, else a few objects the consumer holds from before (so Resync and
// Replace have something to find before anything is popped).
func initialKnown(seed uint64, keys int) *knownStore {
	known := newKnownStore()
	if seed%2 == 1 {
		for k := 0; k < keys; k += 3 {
			key := fmt.Sprintf("ns/k%02d", k)
			known.objs[key] = testObj{Key: key, Val: -100 - k}
		}
	}
	return known
}

func TestQueueMatchesRealFIFO(t *testing.T) {
	t.Parallel()
	for _, cfg := range queueConfigs {
		t.Run(cfg.name, func(t *testing.T) {
			t.Parallel()
			for seed := uint64(1); seed <= 8; seed++ {
				gen := newOpGen(seed, genConfig{
					ops:           3000,
					keys:          12,
					transformErrs: cfg.transform,
					batches:       true,
					bookmarks:     true,
				})
				if err := runQueueDifferential(testutil.Logger(t), cfg, gen.sequence(), initialKnown(seed, 12), newOurQueue); err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
			}
		})
	}
}

// scriptedQueueRuns are sequences random ones are unlikely to produce: lists
// and bursts longer than a batch, and keys that break after being queued.
func scriptedQueueRuns() map[string][]op {
	objs := func(prefix string, n int) []interface{} {
		list := make([]interface{}, n)
		for i := range list {
			list[i] = testObj{Key: fmt.Sprintf("%s%04d", prefix, i), Val: i}
		}
		return list
	}
	adds := func(list []interface{}) []op {
		ops := make([]op, len(list))
		for i, obj := range list {
			ops[i] = op{kind: opAdd, obj: obj}
		}
		return ops
	}
	repeat := func(kind opKind, n int) []op {
		ops := make([]op, n)
		for i := range ops {
			ops[i] = op{kind: kind}
		}
		return ops
	}

	runs := map[string][]op{}
	// The first list is longer than a batch: batches must stop at the
	// batch size and at the end of the first list.
	runs["long first list"] = slices.Concat(
		[]op{{kind: opReplace, list: objs("ns/a", 1500), rv: "10"}},
		adds(objs("ns/b", 700)),
		repeat(opPopBatch, 4),
	)
	// Bursts of distinct keys, batched at the batch size.
	runs["long bursts"] = slices.Concat(
		adds(objs("ns/a", 2500)),
		repeat(opPopBatch, 2),
		[]op{{kind: opReplace, list: objs("ns/a", 1200), rv: "11"}, {kind: opResync}},
		repeat(opPopBatch, 3),
	)
	// A key that repeats ends a batch, however long.
	runs["duplicate key"] = slices.Concat(
		adds(objs("ns/a", 600)),
		[]op{{kind: opUpdate, obj: testObj{Key: "ns/a0001", Val: -5}}},
		adds(objs("ns/c", 10)),
		repeat(opPopBatch, 3),
	)
	// A Delta whose key broke after it was queued is popped, and ends the
	// batch; at the head it is popped alone.
	b1, b2 := &brokenObj{key: "ns/b1"}, &brokenObj{key: "ns/b2"}
	runs["broken key"] = []op{
		{kind: opAdd, obj: testObj{Key: "ns/x", Val: 1}},
		{kind: opAdd, obj: b1},
		{kind: opAdd, obj: testObj{Key: "ns/y", Val: 2}},
		{kind: opAdd, obj: b2},
		{kind: opAdd, obj: testObj{Key: "ns/z", Val: 3}},
		{kind: opBreak, broken: b1},
		{kind: opBreak, broken: b2},
		{kind: opPopBatch},
		{kind: opPop},
		{kind: opPopBatch},
		{kind: opPopBatch},
	}
	return runs
}

func TestQueueMatchesRealFIFOScripted(t *testing.T) {
	t.Parallel()
	for _, cfg := range queueConfigs {
		if cfg.unlock {
			continue // long queues would keep the lock: no probing then
		}
		// Fresh runs per configuration: Break changes shared objects.
		for name, ops := range scriptedQueueRuns() {
			t.Run(name+"/"+cfg.name, func(t *testing.T) {
				t.Parallel()
				if err := runQueueDifferential(testutil.Logger(t), cfg, ops, newKnownStore(), newOurQueue); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}
