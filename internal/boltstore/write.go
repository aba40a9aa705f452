package boltstore

import (
	"bytes"
	"fmt"
	goruntime "runtime"
	"strconv"
	"sync"
	"sync/atomic"

	bolt "go.etcd.io/bbolt"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer/internal/cachefile"
)

// ChangeType says what a write did to one key.
type ChangeType uint8

const (
	// Unchanged: the event was at or below the stored object's RV (or the
	// list item had the stored RV), or a delete found no object. Nothing was written.
	Unchanged ChangeType = iota
	// Added: the key was absent and is now stored.
	Added
	// Updated: the key was present and now holds the new object.
	Updated
	// Deleted: the key was present and is now gone.
	Deleted
)

func (t ChangeType) String() string {
	return [...]string{"Unchanged", "Added", "Updated", "Deleted"}[t]
}

// Change is the effect of one operation. Old is the object stored before
// (decoded from disk, for Updated and Deleted); New is the object given by
// the caller (for Added and Updated).
type Change struct {
	Type ChangeType
	Key  string
	Old  interface{}
	New  interface{}
	// OldErr is set when the previous record could not be decoded; the write
	// still replaced it (Old is then nil).
	OldErr error
	// Absent is set on an Unchanged delete that found no object under its
	// key (client-go's informer still notifies such a delete).
	Absent bool
	// Staged is set on an Added or Updated change that StageListPage
	// staged rather than stored: ApplyStaged stores it, and returns it
	// again then, with its objects.
	Staged bool
}

// writeMode selects when an upsert or delete is skipped.
type writeMode uint8

const (
	// overwrite always writes (cache.Indexer semantics).
	overwrite writeMode = iota
	// newerOnly skips events at or below the stored object's RV (watch events).
	newerOnly
	// differentOnly skips items whose RV and UID equal the stored ones (relist pages).
	differentOnly
)

// op is one prepared write: everything that can fail on bad input (key
// func, metadata, encoding, index funcs) has been done before the
// transaction starts.
type op struct {
	key       string
	del       bool
	tombstone bool   // delete regardless of RV (DeletedFinalStateUnknown)
	rv        string // the object's (or delete event's) resourceVersion
	rec       *cachefile.Record
	enc       []byte
	// encBuf is the pooled buffer enc was built in (recordBufs), given
	// back by releaseEncodings once the write is over.
	encBuf   *[]byte
	obj      interface{}
	plainLen int // the payload's length before compression and sealing
	// plain is that payload, kept (prepareUpsert's keepPlain) for the
	// decode of the version it replaces (objectCodec.decodeOld).
	plain []byte
}

// prepareUpsertLocked builds the record of obj with its index values, its
// payload encoded, the bytes obj was received in when they are given (see
// Op.Encoded). keepPlain keeps its plain payload in the op, for the decode
// of the version it replaces.
func (s *Store) prepareUpsertLocked(obj interface{}, encoded []byte, keepPlain bool) (*op, error) {
	key, err := s.keyFunc(obj)
	if err != nil {
		return nil, cache.KeyError{Obj: obj, Err: err}
	}
	return s.prepareUpsertKeyLocked(key, obj, encoded, keepPlain)
}

func (s *Store) prepareUpsertKeyLocked(key string, obj interface{}, encoded []byte, keepPlain bool) (*op, error) {
	// The payload is built in pooled buffers and copied into enc: a batch
	// of ops holds one copy of each object's bytes, not three.
	plainBuf, packed := payloadBufs.Get().(*[]byte), payloadBufs.Get().(*[]byte)
	defer putPayloadBuf(plainBuf)
	defer putPayloadBuf(packed)
	rec, plain, received, err := newRecord(s.codec, key, obj, encoded, plainBuf, packed)
	if err != nil {
		return nil, fmt.Errorf("store %s key %q: %w", s.name, key, err)
	}
	var kept []byte
	if keepPlain && s.codec.share != nil {
		kept = plain
		if !received {
			kept = bytes.Clone(plain) // in plainBuf, which goes back to the pool
		}
	}
	for n, f := range s.indexers {
		vals, err := computeIndex(n, f, obj)
		if err != nil {
			return nil, fmt.Errorf("store %s key %q: %w", s.name, key, err)
		}
		rec.SetValues(n, vals)
	}
	encBuf := recordBufs.Get().(*[]byte)
	enc, err := cachefile.AppendRecord((*encBuf)[:0], []byte(key), rec)
	if err != nil {
		recordBufs.Put(encBuf)
		return nil, err
	}
	rec.Payload = nil // in plainBuf or packed, which go back to the pool
	return &op{key: key, rv: rec.RV, rec: rec, enc: enc, encBuf: encBuf, obj: obj, plainLen: len(plain), plain: kept}, nil
}

// recordBufs holds the buffers records are encoded in. bbolt keeps the
// value a Put is given until the transaction ends, so a buffer is given
// back only after the write that stored it is over (releaseEncodings).
// Without the pool every record of a cold start (scenario 3) is an
// allocation of its own.
var recordBufs = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledRecord bounds the buffers kept in recordBufs.
const maxPooledRecord = 64 << 10

// releaseEncodings gives the record buffers of prepared back to
// recordBufs. Call it only when the write that put them has returned:
// committed or rolled back, bbolt holds none of them any more.
func releaseEncodings(prepared []*op) {
	for _, o := range prepared {
		if o.encBuf == nil { // a delete
			continue
		}
		if cap(o.enc) <= maxPooledRecord {
			*o.encBuf = o.enc[:0]
			recordBufs.Put(o.encBuf)
		}
		o.enc, o.encBuf = nil, nil
	}
}

// prepareDelete computes the key of a deleted object; obj may be a
// cache.DeletedFinalStateUnknown tombstone.
func (s *Store) prepareDelete(obj interface{}) (*op, error) {
	o := &op{del: true}
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		o.key, o.tombstone = t.Key, true
		return o, nil
	}
	key, err := s.keyFunc(obj)
	if err != nil {
		return nil, cache.KeyError{Obj: obj, Err: err}
	}
	o.key = key
	if m, err := meta.Accessor(obj); err == nil {
		o.rv = m.GetResourceVersion()
	}
	return o, nil
}

// applyTx performs one op in a write transaction. For Updated and Deleted
// it also returns the previous record with its payload copied out of bbolt's
// memory, for decodeOld after the commit (nil when it did not decode: the
// change's OldErr then says why).
func (s *Store) applyTx(b *cachefile.Buckets, o *op, mode writeMode) (Change, *cachefile.Record, error) {
	ch := Change{Key: o.key}
	k := []byte(o.key)
	oldBytes := b.Objects.Get(k)
	var old *cachefile.Record
	var oldErr error
	if oldBytes != nil {
		if old, oldErr = cachefile.DecodeRecord(k, oldBytes); oldErr != nil {
			oldErr = fmt.Errorf("store %s key %q: %w", s.name, o.key, oldErr)
		}
	}
	if o.del {
		if oldBytes == nil {
			ch.Absent = true
			return ch, nil, nil
		}
		if mode == newerOnly && !o.tombstone && old != nil && rvNewer(old.RV, o.rv) {
			return ch, nil, nil
		}
		if err := s.removeIndexTx(b, k, old); err != nil {
			return ch, nil, err
		}
		if err := b.DeleteRecord(k); err != nil {
			return ch, nil, err
		}
		ch.Type, ch.OldErr = Deleted, oldErr
		return ch, detach(old), nil
	}
	if old != nil {
		switch mode {
		case newerOnly:
			if !rvNewer(o.rv, old.RV) {
				return ch, nil, nil
			}
		case differentOnly:
			// The UID too: after an RV-ahead relist, another object may
			// carry a stored object's key and RV.
			if o.rv == old.RV && o.rv != "" && o.rec.UID == old.UID {
				return ch, nil, nil
			}
		}
	}
	if err := s.updateIndexTx(b, k, old, oldBytes != nil && old == nil, o.rec); err != nil {
		return ch, nil, err
	}
	if err := b.PutRecord(k, o.enc, oldBytes != nil); err != nil {
		return ch, nil, err
	}
	ch.New = o.obj
	if oldBytes == nil {
		ch.Type = Added
		return ch, nil, nil
	}
	ch.Type, ch.OldErr = Updated, oldErr
	return ch, detach(old), nil
}

// detach copies a decoded record's payload out of bbolt's memory.
func detach(r *cachefile.Record) *cachefile.Record {
	if r != nil {
		r.Payload = append([]byte(nil), r.Payload...)
	}
	return r
}

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
		ib := b.Idx.Bucket([]byte(e.Name))
		if ib == nil {
			var err error
			if ib, err = b.Idx.CreateBucket([]byte(e.Name)); err != nil {
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

// rvNewer reports whether resourceVersion a is newer than b. Kubernetes
// resourceVersions are opaque, but every apiserver backed by etcd issues
// decimal integers; when either does not parse, only inequality counts as newer.
func rvNewer(a, b string) bool {
	ai, aerr := strconv.ParseUint(a, 10, 64)
	bi, berr := strconv.ParseUint(b, 10, 64)
	if aerr != nil || berr != nil {
		return a != b
	}
	return ai > bi
}

// setRVTx moves the stored RV to rv (and stamps when it moved).
func (s *Store) setRVTx(b *cachefile.Buckets, rv string) error {
	now := cachefile.FormatTime(s.db.Now())
	if string(b.State.Get(cachefile.StateRV)) != rv {
		if err := b.State.Put(cachefile.StateRV, []byte(rv)); err != nil {
			return err
		}
		if err := b.State.Put(cachefile.StateRVUpdatedAt, now); err != nil {
			return err
		}
	}
	return b.State.Put(cachefile.StateUpdatedAt, now)
}

func (s *Store) touchTx(b *cachefile.Buckets) error {
	return b.State.Put(cachefile.StateUpdatedAt, cachefile.FormatTime(s.db.Now()))
}

// write runs fn on the store's buckets in the commit loop, with the hot
// cache kept coherent for keys (nil: every key). fill, called after a
// commit, returns the objects the write stored.
func (s *Store) write(keys []string, fill func() []hotEntry, fn func(b *cachefile.Buckets) error) error {
	var txid int
	w := &cachefile.Write{Fn: func(tx *bolt.Tx) error {
		b, err := cachefile.StoreTx(tx, string(s.name))
		if err != nil {
			return err
		}
		txid = tx.ID()
		if err := fn(b); err != nil {
			return err
		}
		return b.FlushCount()
	}}
	if s.hot != nil {
		w.BeforeCommit = func() { s.hot.beginWrite(keys) }
		w.AfterCommit = func(committed bool) {
			var f []hotEntry
			if committed && fill != nil {
				f = fill()
			}
			s.hot.endWrite(keys, committed, txid, f)
		}
	}
	return s.db.Update(w)
}

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

// opKeys returns the keys of prepared, in order.
func opKeys(prepared []*op) []string {
	keys := make([]string, len(prepared))
	for i, p := range prepared {
		keys[i] = p.key
	}
	return keys
}

// preparePerWorker is how many ops of a batch make it worth another
// goroutine in prepareAll: preparing an op (key, encode, compress, index
// values) costs far more than handing it to a goroutine (make bench,
// scenario 5, measures the batches).
const preparePerWorker = 16

// prepareAll prepares n ops with prepare(i) and returns them in order, or
// the error of the lowest index that failed (with that index). A large
// batch is prepared on every core: the encoding of a cold start's or a
// watch burst's objects was the process loop's largest serial cost. Key
// and index functions may therefore run on several goroutines at once, as
// client-go's Indexer.Index can call them.
func prepareAll(n int, prepare func(i int) (*op, error)) ([]*op, int, error) {
	prepared := make([]*op, n)
	workers := min(goruntime.GOMAXPROCS(0), n/preparePerWorker)
	if workers <= 1 {
		for i := range prepared {
			p, err := prepare(i)
			if err != nil {
				return nil, i, err
			}
			prepared[i] = p
		}
		return prepared, 0, nil
	}
	errs := make([]error, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				start := int(next.Add(preparePerWorker)) - preparePerWorker
				if start >= n {
					return
				}
				for i := start; i < min(start+preparePerWorker, n); i++ {
					prepared[i], errs[i] = prepare(i)
				}
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, i, err
		}
	}
	return prepared, 0, nil
}
