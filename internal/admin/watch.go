package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"net/http"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/boltinformer/boltinformer/internal/cachefile"
)

// EventSynced is the type of the event that follows the initial ADDED
// events of a watch: the objects present when the watch began are all out.
const EventSynced = "SYNCED"

// Event is one change of the objects a watch selects: watch.Added,
// watch.Modified or watch.Deleted with the object (a deleted object is
// known by its key only: apiVersion, kind, namespace and name), or
// EventSynced with none.
type Event struct {
	Type   string                     `json:"type"`
	Object *unstructured.Unstructured `json:"-"`
}

// DefaultWatchInterval is how often a watch looks for a commit to its store.
const DefaultWatchInterval = 200 * time.Millisecond

// watchEntry is what a watch remembers of a stored object: a hash of its
// record, and whether it matched the query when last seen.
type watchEntry struct {
	sum     uint64
	matched bool
}

// Watch calls fn with an ADDED event for every object q selects, then
// EventSynced, then one event per change to them until ctx ends or fn
// fails: ADDED when an object starts to match (created, or relabelled
// into the selector), MODIFIED when a matching object's record changes,
// DELETED when it is deleted or stops matching. It looks every interval
// (0: DefaultWatchInterval) at the store's resourceVersion and last write,
// and after a commit compares every record with the hash it kept (its
// memory is one hash per key of the store, never an object); a change
// that is undone between two looks is not reported. q.Index is not
// supported.
func (l *Local) Watch(ctx context.Context, q Query, fn func(Event) error) error {
	run, err := l.prepareWatch(ctx, q, DefaultWatchInterval)
	if err != nil {
		return err
	}
	return run(fn)
}

func (l *Local) prepareWatch(ctx context.Context, q Query, interval time.Duration) (func(fn func(Event) error) error, error) {
	if q.Index != "" {
		return nil, fmt.Errorf("%w: a watch cannot read through an index", ErrBadQuery)
	}
	si, cq, err := l.compile(ctx, q)
	if err != nil {
		return nil, err
	}
	s, err := l.store(si)
	if err != nil {
		return nil, err
	}
	prefix := ""
	if q.Namespace != "" {
		prefix = q.Namespace + "/"
	}
	wantKey := ""
	if q.Name != "" {
		wantKey = cq.key()
	}
	seed := maphash.MakeSeed()
	known := map[string]watchEntry{}
	// scan compares every record with what the watch knew and reports the differences.
	scan := func(fn func(Event) error) error {
		seen := make(map[string]bool, len(known))
		err := l.walkRecords(ctx, q.Store, func(r Record) error {
			if !strings.HasPrefix(r.Key, prefix) || wantKey != "" && r.Key != wantKey {
				return nil
			}
			seen[r.Key] = true
			sum := maphash.Bytes(seed, r.Value)
			prev, had := known[r.Key]
			if had && prev.sum == sum {
				return nil
			}
			obj, ok, err := s.GetByKey(r.Key)
			if err != nil {
				return fmt.Errorf("store %s key %s: %w", q.Store, r.Key, err)
			}
			if !ok {
				return nil // deleted since the walk read it: the next scan reports it
			}
			o, err := native(obj)
			if err != nil {
				return err
			}
			matched, err := cq.matches(o)
			if err != nil {
				return err
			}
			known[r.Key] = watchEntry{sum: sum, matched: matched}
			var typ watch.EventType
			switch {
			case matched && had && prev.matched:
				typ = watch.Modified
			case matched:
				typ = watch.Added
			case had && prev.matched:
				typ = watch.Deleted
			default:
				return nil
			}
			u, err := normalize(o, si.identity, q.MetadataOnly, q.ShowSecrets)
			if err != nil {
				return fmt.Errorf("store %s: %w", q.Store, err)
			}
			return fn(Event{Type: string(typ), Object: u})
		})
		if err != nil {
			return err
		}
		for key, e := range known {
			if seen[key] {
				continue
			}
			delete(known, key)
			if e.matched {
				if err := fn(Event{Type: string(watch.Deleted), Object: keyObject(key, si.identity)}); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return func(fn func(Event) error) error {
		last, err := l.storeVersion(q.Store)
		if err != nil {
			return err
		}
		if err := scan(fn); err != nil {
			return err
		}
		if err := fn(Event{Type: EventSynced}); err != nil {
			return err
		}
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-t.C:
			}
			v, err := l.storeVersion(q.Store)
			if err != nil {
				return err
			}
			if bytes.Equal(v, last) {
				continue
			}
			last = v
			if err := scan(fn); err != nil {
				return err
			}
		}
	}, nil
}

// storeVersion returns the store's stored RV and last-write time, which
// every commit to the store changes.
func (l *Local) storeVersion(store string) ([]byte, error) {
	var v []byte
	err := l.db.View(func(tx *bolt.Tx) error {
		stores := tx.Bucket(cachefile.StoresBucket)
		var root *bolt.Bucket
		if stores != nil {
			root = stores.Bucket([]byte(store))
		}
		if root == nil || root.Bucket(cachefile.StateBucket) == nil {
			return fmt.Errorf("%w: %q in %s", ErrStoreNotFound, store, l.db.Path())
		}
		state := root.Bucket(cachefile.StateBucket)
		v = append(append(bytes.Clone(state.Get(cachefile.StateRV)), 0), state.Get(cachefile.StateUpdatedAt)...)
		return nil
	})
	return v, err
}

// keyObject is what a watch knows of a deleted object: its kind and key.
func keyObject(key string, id *cachefile.Identity) *unstructured.Unstructured {
	ns, name, found := strings.Cut(key, "/")
	if !found {
		ns, name = "", key
	}
	u := &unstructured.Unstructured{Object: map[string]interface{}{}}
	u.SetNamespace(ns)
	u.SetName(name)
	if id != nil {
		u.SetGroupVersionKind(schema.GroupVersionKind{Group: id.Group, Version: id.Version, Kind: id.Kind})
	}
	return u
}

// wireEvent is an event on the wire: {"type":…,"object":{…}}.
type wireEvent struct {
	Type   string          `json:"type"`
	Object json.RawMessage `json:"object,omitempty"`
}

func (s *Server) handleWatch(w http.ResponseWriter, r *http.Request) {
	q, err := ParseQuery(r.PathValue("store"), r.URL.Query())
	if err != nil {
		writeError(w, err)
		return
	}
	run, err := s.local.prepareWatch(r.Context(), q, DefaultWatchInterval)
	if err != nil {
		writeError(w, err)
		return
	}
	sw := startStream(w)
	flush := http.NewResponseController(w)
	err = run(func(e Event) error {
		we := &wireEvent{Type: e.Type}
		if e.Object != nil {
			b, err := json.Marshal(e.Object.Object)
			if err != nil {
				return err
			}
			we.Object = b
		}
		if err := sw.write(&frame{Event: we}); err != nil {
			return err
		}
		if err := sw.buf.Flush(); err != nil {
			return err
		}
		return flush.Flush()
	})
	if r.Context().Err() != nil {
		return // the client left, or the server is closing: nobody reads an end frame
	}
	sw.finish(err)
}

// Watch streams the events of a watch the owning process runs (see
// Local.Watch) until ctx ends, fn fails or the process closes the socket
// (ErrTruncated, or the error it reported).
func (c *Client) Watch(ctx context.Context, q Query, fn func(Event) error) error {
	return c.stream(ctx, storePath(pathWatch, q.Store), q.Values(), func(f *frame) error {
		if f.Event == nil {
			return fmt.Errorf("%w: watch stream from %s has a frame without an event", ErrProtocol, c.path)
		}
		e := Event{Type: f.Event.Type}
		if len(f.Event.Object) > 0 {
			content := map[string]interface{}{}
			if err := utiljson.Unmarshal(f.Event.Object, &content); err != nil {
				return fmt.Errorf("%w: object from %s: %v", ErrProtocol, c.path, err)
			}
			e.Object = &unstructured.Unstructured{Object: content}
		}
		return fn(e)
	})
}
