package boltstore

import (
	"bytes"
	"fmt"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer/internal/cachefile"
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

// opKeys returns the keys of prepared, in order.
func opKeys(prepared []*op) []string {
	keys := make([]string, len(prepared))
	for i, p := range prepared {
		keys[i] = p.key
	}
	return keys
}

// keyOrder returns the indexes of prepared in the order of their keys,
// those of one key in their own order. A batch applied in that order walks
// the tree's pages in order, each leaf visited by consecutive puts, rather
// than jumping across the file for every op; the ops of different keys
// touch different records and index entries, so the order changes nothing
// else.
func keyOrder(prepared []*op) []int {
	order := make([]int, len(prepared))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(i, j int) int { return strings.Compare(prepared[i].key, prepared[j].key) })
	return order
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
