package boltstore

import (
	"fmt"
	goruntime "runtime"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/boltinformer/boltinformer/internal/cachefile"
)

// decodeOld decodes the previous objects of changes after their commit.
func (s *Store) decodeOld(changes []Change, olds []*cachefile.Record) {
	d := s.startDecodeOld(changes, olds, nil, false)
	d.wait()
	d.fill(changes)
}

// oldDecoding is the decode of a batch's previous records, spread over
// every core. It copies what it reads from the batch's changes, so the
// caller may rewrite them (a retried transaction) before wait.
type oldDecoding struct {
	s     *Store
	items []oldItem
	next  atomic.Int64
	wg    sync.WaitGroup
}

// oldItem is one previous record to decode, and what came of it.
type oldItem struct {
	change int // the change to fill
	key    string
	rec    *cachefile.Record
	// new and plain are the new version and its plain payload, which the
	// old one shares the unchanged fields of (plain nil: decode in full).
	new   interface{}
	plain []byte
	obj   runtime.Object
	err   error
}

// startDecodeOld starts decoding the records of olds (detached from
// bbolt's memory) whose changes have no OldErr, but not those of deletes
// when skipDeletes. prepared, when given, are the ops of changes: an old
// version then shares with its new one the fields both encode the same.
func (s *Store) startDecodeOld(changes []Change, olds []*cachefile.Record, prepared []*op, skipDeletes bool) *oldDecoding {
	d := &oldDecoding{s: s}
	for i, ch := range changes {
		if olds[i] == nil || ch.OldErr != nil || (skipDeletes && ch.Type == Deleted) {
			continue
		}
		it := oldItem{change: i, key: ch.Key, rec: olds[i], new: ch.New}
		if prepared != nil && ch.Type == Updated {
			it.plain = prepared[i].plain
		}
		d.items = append(d.items, it)
	}
	for range min(goruntime.GOMAXPROCS(0), len(d.items)) {
		d.wg.Go(d.work)
	}
	return d
}

func (d *oldDecoding) work() {
	for {
		i := int(d.next.Add(1) - 1)
		if i >= len(d.items) {
			return
		}
		it := &d.items[i]
		it.obj, it.err = d.s.codec.decodeOld(it.key, it.rec, it.new, it.plain)
	}
}

// wait returns once every record is decoded.
func (d *oldDecoding) wait() { d.wg.Wait() }

// fill waits, then sets Old (or OldErr) of the changes decoded.
func (d *oldDecoding) fill(changes []Change) {
	d.wait()
	for _, it := range d.items {
		if it.err != nil {
			changes[it.change].OldErr = fmt.Errorf("store %s key %q: %w", d.s.name, it.key, it.err)
			continue
		}
		changes[it.change].Old = it.obj
	}
}
