package admin

import (
	"context"
	"io"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/boltinformer/boltinformer/internal/cachefile"
)

// Reader is what the read commands of cachectl need. *Local reads a DB in
// this process (a file opened read-only, or the file a Server serves);
// *Client asks a live process over its admin socket. Both return the same
// answers for the same data: objects are normalised to the JSON form the
// wire carries before they are handed out.
type Reader interface {
	// Info describes the file and its stores.
	Info(ctx context.Context) (*Info, error)
	// List calls fn for every object of q.Store that q selects, in key
	// order. Objects are JSON-normalised unstructured objects with
	// apiVersion and kind set and Secrets redacted unless q.ShowSecrets.
	List(ctx context.Context, q Query, fn func(*unstructured.Unstructured) error) error
	// Records calls fn with every raw record (the stored bytes) of a
	// store, in key order. Secret stores need showSecrets.
	Records(ctx context.Context, store string, showSecrets bool, fn func(Record) error) error
	// Snapshot writes a snapshot of the whole file to w in package
	// snapshot's format (a consistent copy from one bbolt read transaction,
	// with a header and a SHA-256 trailer) and returns the bytes written.
	Snapshot(ctx context.Context, w io.Writer) (int64, error)
	// Watch calls fn with an ADDED event per object q selects, then
	// EventSynced, then every change to them until ctx ends (see
	// Local.Watch).
	Watch(ctx context.Context, q Query, fn func(Event) error) error
	// Close releases the reader (and the file, when the reader opened it).
	Close() error
}

// Info describes a cache file. It is the body of GET /v1/info.
type Info struct {
	// Path is the file's path as the reading process opened it.
	Path string `json:"path"`
	// Size is the file's size in bytes.
	Size int64 `json:"size"`
	// Live is true when a process that owns the file answered (over its socket).
	Live          bool        `json:"live"`
	SchemaVersion uint64      `json:"schemaVersion"`
	CreatedAt     string      `json:"createdAt,omitempty"`
	WriterVersion string      `json:"writerVersion,omitempty"`
	Stores        []StoreInfo `json:"stores"`
}

// StoreInfo describes one store without decoding any object.
type StoreInfo struct {
	Name     string              `json:"name"`
	Identity *cachefile.Identity `json:"identity,omitempty"`
	// ResourceVersion is the RV the store is current to ("" before its first sync).
	ResourceVersion string `json:"resourceVersion"`
	Relisting       bool   `json:"relisting,omitempty"`
	RelistReason    string `json:"relistReason,omitempty"`
	// RelistSeen is, while relisting, how many objects the relist has
	// listed so far (its progress).
	RelistSeen int `json:"relistSeen,omitempty"`
	Objects    int `json:"objects"`
	// UpdatedAt is the time of the store's last commit.
	UpdatedAt time.Time `json:"updatedAt,omitzero"`
	// Indexes maps each stored index to its number of distinct values.
	Indexes map[string]int `json:"indexes,omitempty"`
	// Namespaced is true when the first stored key has a "namespace/"
	// prefix, false when it has none, and nil for an empty store.
	Namespaced *bool `json:"namespaced,omitempty"`
	// Namespaces lists the namespaces of the stored objects, sorted (read
	// from the keys, one seek per namespace).
	Namespaces []string `json:"namespaces,omitempty"`
	// Served is false for a store a live process has in its file but has
	// not registered with its Server: it is listed but cannot be queried.
	Served bool `json:"served"`
}

// Store returns the named store's info.
func (i *Info) Store(name string) (StoreInfo, bool) {
	for _, s := range i.Stores {
		if s.Name == name {
			return s, true
		}
	}
	return StoreInfo{}, false
}

// Record is one stored record, as bytes: the key and the msgpack envelope
// internal/boltstore wrote. It is what GET /v1/stores/{store}/records streams.
type Record struct {
	Key   string `json:"key"`
	Value []byte `json:"value"`
}
