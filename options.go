package boltinformer

import (
	"time"

	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/boltinformer/boltinformer/reflector"
	"github.com/go-logr/logr"
)

// DefaultBatchSize is the most watch events one commit applies (group
// commit): events queued while a commit waits for fsync go into the next
// one. Large enough that the fsync costs little per event (make bench,
// scenario 5). A relist commits at most PageSize objects at a time, so a
// cold sync's Go heap stays bounded whatever the number of objects and
// fits a small container with the file's page cache (scenarios 2 and 9).
const DefaultBatchSize = 500

// InformerOptions configure one informer.
type InformerOptions struct {
	// StoreName names the informer's store in the file. It defaults to the
	// object's kind, version and group ("Pod.v1", "Deployment.v1.apps") and
	// must be set when two informers of one type use different selectors.
	// Two informers of one Cache cannot hold one store at once; the name
	// is free again once the informer holding it has stopped (its Run has
	// returned) or has been released (Cache.ReleaseInformer).
	StoreName string
	// Namespace, LabelSelector and FieldSelector describe what the
	// ListerWatcher returns. They are the store's identity: opening a store
	// with a different identity empties it and relists, so objects cached
	// under another selector are never reused. A ListerWatcher bakes its
	// selectors in where boltinformer cannot see them: callers must state
	// them here.
	Namespace     string
	LabelSelector string
	FieldSelector string
	// Resource is the plural resource name, recorded for cachectl. With
	// the resource's API group it decides whether the store is sealed
	// (EncryptionOptions): Secrets are, in any shape.
	Resource string
	// Group is Resource's API group when the example object does not name
	// its kind (dynamic and metadata-only informers); otherwise the
	// example's group is the resource's, and Group must be empty or equal
	// to it.
	Group string
	// Scope names anything else that decides which objects the store holds
	// or how they look, such as the shape of the objects (typed,
	// unstructured, metadata-only: each has its own encoding). It is part
	// of the store's identity, as Namespace and the selectors are.
	Scope string

	// ResyncPeriod is the default handler resync period (0: never).
	ResyncPeriod time.Duration
	// Indexers are the informer's indexes; IndexVersions tag their
	// definitions (change a tag to rebuild that index on the next start).
	// An IndexFunc may be called on several goroutines at once (a large
	// batch is encoded and indexed on every core), as client-go's
	// Indexer.Index can call it: it must not change shared state.
	Indexers      cache.Indexers
	IndexVersions map[string]string

	// DisableReplay turns off the warm-start replay: handlers registered
	// before Run then see only changes made after the stored state.
	DisableReplay bool
	// HotCacheBytes bounds the optional cache of decoded objects, in bytes
	// of the heap they hold (0: off); a sample of them is measured, the
	// others sized from their encoding by it. Objects it returns are shared
	// and must not be mutated.
	HotCacheBytes int64
	// CopyStrings makes the objects the informer's store returns (its
	// listers, GetIndexer, the old object of an update) hold strings of
	// their own. By default an object's strings share one buffer, a copy of
	// its protobuf encoding: reads allocate less and run faster, but a
	// string kept after its object is dropped keeps that buffer (about the
	// object's protobuf size) alive. Set it when handlers keep small parts
	// of many objects for long, or strings.Clone what they keep. The objects
	// of WATCH events come from the ListerWatcher: the factories set the
	// same on the reflector.ListWatch they make
	// (ListWatchOptions.CopyStrings); set it there on one of your own.
	CopyStrings bool
	// PageSize is the LIST page size of a relist (default 50): the relist
	// holds about two pages of decoded objects on the heap.
	PageSize int64
	// PageBytes shrinks a relist's pages below PageSize when the objects
	// are large: a page then holds about PageBytes of them by their
	// protobuf size (default 256 KiB: 50 Pods of 4.4 KB, 28 of 9.3 KB;
	// negative: PageSize only). It keeps a relist's heap bounded whatever
	// the objects weigh.
	PageBytes int64
	// WatchList chooses how a relist gets its snapshot.
	WatchList reflector.WatchListMode
	// BatchSize is the most watch events one bbolt transaction applies
	// (default DefaultBatchSize). A relist's objects are committed at most
	// PageSize at a time whatever BatchSize says.
	BatchSize int
	// WatchEstablishedAfter is how long a WATCH resumed from the stored
	// resourceVersion must run without an ERROR event before HasSynced turns
	// true (an apiserver accepts a WATCH from an expired resourceVersion and
	// sends 410 as its first event). Zero means 250 ms; raise it on a
	// heavily loaded apiserver.
	WatchEstablishedAfter time.Duration

	// Clock drives resync and backoff; clock.RealClock if nil.
	Clock clock.WithTicker
	// Logger is the informer's logger; the cache's if zero (no sink).
	Logger logr.Logger
}
