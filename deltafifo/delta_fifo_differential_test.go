package deltafifo

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"k8s.io/client-go/tools/cache"
)

// deltaFIFO is the API shared by cache.DeltaFIFO and DeltaFIFO that the
// differential test drives.
type deltaFIFO interface {
	cache.Queue
	IsClosed() bool
}

// deltaFIFOConfig is one way of configuring both queues.
type deltaFIFOConfig struct {
	name      string
	noKnown   bool // KnownObjects nil
	replaced  bool // EmitDeltaTypeReplaced
	transform bool // Transformer
}

var deltaFIFOConfigs = []deltaFIFOConfig{
	{name: "known+replaced", replaced: true},
	{name: "known+sync"},
	{name: "known+replaced+transform", replaced: true, transform: true},
	{name: "noknown+replaced", noKnown: true, replaced: true},
	{name: "noknown+sync+transform", noKnown: true, transform: true},
}

func (c deltaFIFOConfig) knownObjects(known *knownStore) cache.KeyListerGetter {
	if c.noKnown {
		return nil // not a nil *knownStore: that would be a non-nil interface
	}
	return known
}

func (c deltaFIFOConfig) transformer() cache.TransformFunc {
	if c.transform {
		return testTransform
	}
	return nil
}

func (c deltaFIFOConfig) newRef(known *knownStore) deltaFIFO {
	return cache.NewDeltaFIFOWithOptions(cache.DeltaFIFOOptions{
		KeyFunction:           testKeyFunc,
		KnownObjects:          c.knownObjects(known),
		EmitDeltaTypeReplaced: c.replaced,
		Transformer:           c.transformer(),
	})
}

func (c deltaFIFOConfig) options(known *knownStore) DeltaFIFOOptions {
	return DeltaFIFOOptions{
		KeyFunction:           testKeyFunc,
		KnownObjects:          c.knownObjects(known),
		EmitDeltaTypeReplaced: c.replaced,
		Transformer:           c.transformer(),
	}
}

func newOurDeltaFIFO(opts DeltaFIFOOptions) deltaFIFO { return NewDeltaFIFO(opts) }

// deltaSide is one of the two queues under comparison, with its consumer.
type deltaSide struct {
	fifo  deltaFIFO
	known *knownStore
	queue func() []string                // the queued keys, read without locking
	items func() map[string]cache.Deltas // the accumulators, likewise
	pops  []popRecord
}

func (s *deltaSide) process(fail bool) cache.PopProcessFunc {
	return func(obj interface{}, isInInitialList bool) error {
		deltas := obj.(cache.Deltas)
		s.pops = append(s.pops, popRecord{Func: "Pop", Deltas: slices.Clone(deltas), InitialList: isInInitialList})
		for _, d := range deltas {
			s.known.apply(d)
		}
		if fail {
			return errProcess
		}
		return nil
	}
}

func (s *deltaSide) apply(o op) stepResult {
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
	case opPop:
		ret, err = s.fifo.Pop(s.process(o.fail))
	case opPhantom:
		s.known.phantoms[o.key] = o.err
	case opClose:
		s.fifo.Close()
	default:
		panic(fmt.Sprintf("DeltaFIFO has no %v", o))
	}
	return stepResult{Err: errClass(err), Returned: ret, Pops: s.pops}
}

type deltaState struct {
	HasSynced bool
	Done      bool
	Closed    bool
}

func (s *deltaSide) state() deltaState {
	return deltaState{
		HasSynced: s.fifo.HasSynced(),
		Done:      cache.IsDone(s.fifo.HasSyncedChecker()),
		Closed:    s.fifo.IsClosed(),
	}
}

// runDeltaFIFODifferential applies ops to client-go's DeltaFIFO and to the
// queue newOurs makes, both configured by cfg with the same initial
// KnownObjects, and returns the first difference in what they return, what
// their consumers see, the order of their keys, their accumulators, or what
// HasSynced says. It ends by closing and draining both.
func runDeltaFIFODifferential(cfg deltaFIFOConfig, ops []op, initial *knownStore, newOurs func(DeltaFIFOOptions) deltaFIFO) error {
	refKnown, ourKnown := initial.clone(), initial.clone()
	ref := &deltaSide{fifo: cfg.newRef(refKnown), known: refKnown}
	refQueue := unexportedField[[]string](ref.fifo, "queue")
	refItems := unexportedField[map[string]cache.Deltas](ref.fifo, "items")
	ref.queue = func() []string { return *refQueue }
	ref.items = func() map[string]cache.Deltas { return *refItems }
	ours := &deltaSide{fifo: newOurs(cfg.options(ourKnown)), known: ourKnown}
	ours.queue = func() []string { return deltaFIFOOf(ours.fifo).queue }
	ours.items = func() map[string]cache.Deltas { return deltaFIFOOf(ours.fifo).items }
	sides := []*deltaSide{ref, ours}

	step := func(i int, o op) error {
		if o.kind == opPop && len(ours.queue()) == 0 && !ours.fifo.IsClosed() {
			return nil // both empty (checked before): Pop would block
		}
		var res [2]stepResult
		for j, s := range sides {
			res[j] = s.apply(o)
		}
		if !res[0].equal(res[1]) {
			return fmt.Errorf("step %d %v: results differ:\nclient-go: %+v\nours:      %+v%s", i, o, res[0], res[1], history(ops, i))
		}
		if rs, os := ref.state(), ours.state(); rs != os {
			return fmt.Errorf("after step %d %v: state differs:\nclient-go: %+v\nours:      %+v%s", i, o, rs, os, history(ops, i))
		}
		if !slices.Equal(ref.queue(), ours.queue()) {
			return fmt.Errorf("after step %d %v: queued keys differ:\nclient-go: %q\nours:      %q%s", i, o, ref.queue(), ours.queue(), history(ops, i))
		}
		if fullCheck(i, o, len(ours.queue())) && !maps.EqualFunc(ref.items(), ours.items(), func(a, b cache.Deltas) bool { return deltasEqual(a, b) }) {
			return fmt.Errorf("after step %d %v: accumulators differ:\nclient-go: %+v\nours:      %+v%s", i, o, ref.items(), ours.items(), history(ops, i))
		}
		if knownChecked(o) && !ref.known.equal(ours.known) {
			return fmt.Errorf("after step %d %v: known objects differ:\nclient-go: %+v\nours:      %+v%s", i, o, ref.known, ours.known, history(ops, i))
		}
		return nil
	}

	for i, o := range ops {
		if err := step(i, o); err != nil {
			return err
		}
	}
	ops = append(ops, op{kind: opClose})
	if err := step(len(ops)-1, ops[len(ops)-1]); err != nil {
		return err
	}
	for {
		ops = append(ops, op{kind: opPop})
		empty := len(ours.queue()) == 0
		if err := step(len(ops)-1, ops[len(ops)-1]); err != nil {
			return err
		}
		if empty {
			return nil
		}
	}
}

// deltaFIFOOf finds our DeltaFIFO in a deltaFIFO, which may be a wrapper
// around it.
func deltaFIFOOf(f deltaFIFO) *DeltaFIFO {
	switch q := f.(type) {
	case *DeltaFIFO:
		return q
	case interface{ inner() *DeltaFIFO }:
		return q.inner()
	}
	panic(fmt.Sprintf("no DeltaFIFO in %T", f))
}

func TestDeltaFIFOMatchesClientGo(t *testing.T) {
	t.Parallel()
	for _, cfg := range deltaFIFOConfigs {
		t.Run(cfg.name, func(t *testing.T) {
			t.Parallel()
			for seed := uint64(1); seed <= 8; seed++ {
				gen := newOpGen(seed, genConfig{ops: 3000, keys: 12, transformErrs: cfg.transform})
				if err := runDeltaFIFODifferential(cfg, gen.sequence(), initialKnown(seed, 12), newOurDeltaFIFO); err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
			}
		})
	}
}
