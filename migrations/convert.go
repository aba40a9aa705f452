package migrations

import (
	"fmt"
	"runtime"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// recordFunc rewrites one record of a store in another envelope. Each
// goroutine that converts records has one of its own (newRecordFunc), so
// it may keep buffers between calls.
type recordFunc func(store, key, v []byte) ([]byte, error)

// convertChunk is the number of records one conversion job holds: large
// enough that the hand-offs cost little, small enough that the records in
// flight (a few chunks per worker) stay a few MB.
const convertChunk = 256

// convertJob is a run of consecutive records of one store and, once done
// is closed, their conversions (or the first error).
type convertJob struct {
	keys, vals, out [][]byte
	err             error
	done            chan struct{}
}

// convertRecords puts every record of objects, converted by a recordFunc
// of newRecord, into w at path, in key order, and returns how many there
// were. The conversion (decode, compress, checksum, encode) runs on every
// core while this goroutine writes: a rewrite is then bounded by bbolt's
// writes, not by the envelope's CPU. src's transaction must stay open
// until it returns; it returns only after its goroutines have.
func convertRecords(objects *bolt.Bucket, store []byte, w *batchWriter, path [][]byte, newRecord func() recordFunc) (int, error) {
	workers := runtime.GOMAXPROCS(0)
	jobs := make(chan *convertJob)
	// queue holds the jobs in key order, so that the writer puts them in
	// the order the cursor read them; its capacity bounds the records in
	// flight.
	queue := make(chan *convertJob, 2*workers)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			record := newRecord()
			for j := range jobs {
				for i := range j.keys {
					out, err := record(store, j.keys[i], j.vals[i])
					if err != nil {
						j.err = fmt.Errorf("store %s key %q: %w", store, j.keys[i], err)
						break
					}
					j.out[i] = out
				}
				close(j.done)
			}
		})
	}
	var readErr error
	wg.Go(func() {
		defer close(queue)
		defer close(jobs)
		c := objects.Cursor()
		k, v := c.First()
		for k != nil {
			j := &convertJob{done: make(chan struct{})}
			for ; k != nil && len(j.keys) < convertChunk; k, v = c.Next() {
				if v == nil {
					readErr = fmt.Errorf("%w: store %s: objects holds a bucket %q", ErrLayout, store, k)
					return
				}
				j.keys, j.vals = append(j.keys, k), append(j.vals, v)
			}
			j.out = make([][]byte, len(j.keys))
			select {
			case queue <- j:
			case <-stop:
				return
			}
			select {
			case jobs <- j:
			case <-stop:
				close(j.done) // never converted; the writer has stopped waiting
				return
			}
		}
	})
	n, err := writeConverted(queue, w, path)
	close(stop)
	for range queue {
		// Let the reader finish: it may be blocked on a full queue.
	}
	wg.Wait()
	if err == nil {
		err = readErr
	}
	return n, err
}

// writeConverted puts the jobs' records into w in queue order until the
// queue closes or a job or a put fails.
func writeConverted(queue <-chan *convertJob, w *batchWriter, path [][]byte) (int, error) {
	n := 0
	for j := range queue {
		<-j.done
		if j.err != nil {
			return n, j.err
		}
		for i, k := range j.keys {
			if err := w.put(path, k, j.out[i]); err != nil {
				return n, err
			}
		}
		n += len(j.keys)
	}
	return n, nil
}
