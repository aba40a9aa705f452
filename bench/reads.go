package bench

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/ctrlcache"
)

// Readers compared by the read benchmarks. The controller-runtime rows go
// through controller-runtime's real cache (cache.New and its CacheReader,
// which deep-copies every object it returns unless told otherwise); over
// boltinformer it is configured with DefaultUnsafeDisableDeepCopy, which is
// safe there because every read decodes a fresh object.
const (
	ReaderClientGo     = "client-go"             // client-go's indexer: shared objects, no copy
	ReaderCR           = "controller-runtime"    // controller-runtime's cache over client-go's informer (deep copy)
	ReaderBolt         = "boltinformer"          // Store: decodes every object it returns
	ReaderBoltHot      = "boltinformer-hot"      // Store with the hot-object cache (shared objects)
	ReaderCRBolt       = "controller-runtime+bi" // controller-runtime's cache over boltinformer, no deep copy
	ReaderDecode       = "decode"                // protobuf decode of the same objects: the floor for a decoding reader
	readHotWorkingSet  = 100
	readHotCacheBytes  = 1 << 30
	readNamespaceIndex = 42
)

// ReadResult is one read benchmark: the median of Count runs.
type ReadResult struct {
	Name        string  `json:"name"`
	Op          string  `json:"op"`
	Reader      string  `json:"reader"`
	NsPerOp     float64 `json:"nsPerOp"`
	AllocsPerOp int64   `json:"allocsPerOp"`
	BytesPerOp  int64   `json:"bytesPerOp"`
	Objects     int     `json:"objects"`
}

// ReadEnv holds every reader, synced on the same objects from one server.
type ReadEnv struct {
	N          int
	Namespace  string
	hotKeys    []string
	randomKeys []string
	listPB     [][]byte // every object's protobuf message
	nsPB       [][]byte // the namespace's objects
	nsObjects  int

	clientGo cache.Indexer
	bolt     cache.Indexer
	boltHot  cache.Indexer
	cr       client.Reader
	crBolt   client.Reader

	closers []func() error
}

// Which readers a ReadEnv syncs (ReadersOf).
const (
	// ReadersAll: every reader in one process (go test -bench). The
	// in-memory readers' caches (400 MB at 10k Pods) then make every
	// garbage collection of the process long, and a reader's time depends
	// on what it allocates more than on what it does.
	ReadersAll = "all"
	// ReadersClientGo: client-go's indexer and controller-runtime's cache
	// over it, as a controller built on them runs.
	ReadersClientGo = ImplClientGo
	// ReadersBolt: boltinformer's readers without the hot-object cache
	// and the plain decode, as a controller built on boltinformer runs
	// (its heap: a few MB).
	ReadersBolt = ImplBolt
	// ReadersBoltHot: boltinformer with the hot-object cache, whose objects
	// (up to 180 MB of them at 10k Pods) are a heap of their own.
	ReadersBoltHot = ReaderBoltHot
)

// NewReadEnv syncs the readers of set (ReadersAll, ReadersClientGo,
// ReadersBolt or ReadersBoltHot; "" is all) from the apiserver at target, which serves n Pods
// made by Pod(i, namespaces, i+1) (the fake's objects), keeping the cache
// files in dir.
func NewReadEnv(ctx context.Context, target Target, n, namespaces int, dir, set string) (_ *ReadEnv, err error) {
	if set == "" {
		set = ReadersAll
	}
	if set != ReadersAll && set != ReadersClientGo && set != ReadersBolt && set != ReadersBoltHot {
		return nil, fmt.Errorf("%w: readers %q (want %s, %s, %s or %s)", ErrBadConfig, set, ReadersAll, ReadersClientGo, ReadersBolt, ReadersBoltHot)
	}
	all := set == ReadersAll
	inMemory, bolt, hot := all || set == ReadersClientGo, all || set == ReadersBolt, all || set == ReadersBoltHot
	e := &ReadEnv{N: n, Namespace: fmt.Sprintf("team-%03d", readNamespaceIndex%namespaces)}
	defer func() {
		if err != nil {
			_ = e.Close()
		}
	}()
	for i := range n {
		p := Pod(i, namespaces, int64(i+1))
		pb, err := p.Marshal()
		if err != nil {
			return nil, err
		}
		e.listPB = append(e.listPB, pb)
		if p.Namespace == e.Namespace {
			e.nsPB = append(e.nsPB, pb)
		}
		if i < readHotWorkingSet {
			q := Pod((i*97)%n, namespaces, 0)
			e.hotKeys = append(e.hotKeys, q.Namespace+"/"+q.Name)
		}
		r := Pod(int((int64(i)*7919)%int64(n)), namespaces, 0)
		e.randomKeys = append(e.randomKeys, r.Namespace+"/"+r.Name)
	}
	e.nsObjects = len(e.nsPB)

	cs, err := target.Clientset(nil)
	if err != nil {
		return nil, err
	}
	for _, r := range []struct {
		impl string
		hot  int64
		dst  *cache.Indexer
	}{{ImplClientGo, 0, &e.clientGo}, {ImplBolt, 0, &e.bolt}, {ImplBolt, readHotCacheBytes, &e.boltHot}} {
		if (r.impl == ImplClientGo && !inMemory) || (r.impl == ImplBolt && r.hot == 0 && !bolt) || (r.hot > 0 && !hot) {
			continue
		}
		spec := Spec{Impl: r.impl, HotCacheBytes: r.hot, DB: filepath.Join(dir, fmt.Sprintf("reads-%d.db", len(e.closers)))}
		u, err := startInformer(ctx, spec, PodListWatch(cs, "", ""), nil)
		if err != nil {
			return nil, err
		}
		e.closers = append(e.closers, u.Close)
		if err := waitFor(ctx, r.impl+" sync", u.inf.HasSynced); err != nil {
			return nil, err
		}
		*r.dst = u.inf.GetIndexer()
	}

	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(v1.SchemeGroupVersion.WithKind("Pod"), meta.RESTScopeNamespace)
	cfg := target.RESTConfig(nil)
	if inMemory {
		if e.cr, err = e.startCR(ctx, crcache.New, cfg, crcache.Options{Scheme: scheme.Scheme, Mapper: mapper}); err != nil {
			return nil, err
		}
	}
	if !bolt {
		return e, e.checkCR(ctx)
	}
	bc, err := boltinformer.Open(filepath.Join(dir, "reads-cr.db"), boltinformer.Options{})
	if err != nil {
		return nil, err
	}
	e.closers = append(e.closers, bc.Close)
	noCopy := true
	// No hot cache: the reader decodes from the file, as the informer's
	// reads above do.
	newCache := ctrlcache.NewCache(bc, ctrlcache.Options{Informer: boltinformer.InformerOptions{HotCacheBytes: -1}})
	crB, err := e.startCR(ctx, newCache, cfg, crcache.Options{
		Scheme: scheme.Scheme, Mapper: mapper,
		DefaultUnsafeDisableDeepCopy: &noCopy,
	})
	if err != nil {
		return nil, err
	}
	e.crBolt = crB
	return e, e.checkCR(ctx)
}

// checkCR checks that the controller-runtime readers list every object.
func (e *ReadEnv) checkCR(ctx context.Context) error {
	for name, r := range map[string]client.Reader{ReaderCR: e.cr, ReaderCRBolt: e.crBolt} {
		if r == nil {
			continue
		}
		var l v1.PodList
		if err := r.List(ctx, &l); err != nil || len(l.Items) != e.N {
			return fmt.Errorf("%s lists %d of %d: %v", name, len(l.Items), e.N, err)
		}
	}
	return nil
}

func (e *ReadEnv) startCR(ctx context.Context, newCache crcache.NewCacheFunc, cfg *rest.Config, opts crcache.Options) (crcache.Cache, error) {
	c, err := newCache(cfg, opts)
	if err != nil {
		return nil, err
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Start(runCtx) }()
	// Closers run in reverse order: the manager's informers stop before
	// the boltinformer file closes.
	e.closers = append(e.closers, func() error {
		stop()
		return <-done
	})
	if _, err := c.GetInformer(ctx, &v1.Pod{}); err != nil {
		return nil, err
	}
	if !c.WaitForCacheSync(ctx) {
		return nil, errors.New("controller-runtime cache did not sync")
	}
	return c, nil
}

// Close stops every reader.
func (e *ReadEnv) Close() error {
	var errs []error
	for i := len(e.closers) - 1; i >= 0; i-- {
		errs = append(errs, e.closers[i]())
	}
	e.closers = nil
	return errors.Join(errs...)
}

// NamedBenchmark is one read benchmark.
type NamedBenchmark struct {
	Op, Reader string
	Objects    int
	F          func(b *testing.B)
}

// Name is the benchmark's name, benchstat style: Op/Reader.
func (nb NamedBenchmark) Name() string { return nb.Op + "/" + nb.Reader }

// Benchmarks returns the read benchmarks. Get reads one object by key,
// from a working set of 100 keys (hot) or spread over all (random); List
// reads all; ByIndex reads one namespace through the namespace index.
func (e *ReadEnv) Benchmarks() []NamedBenchmark {
	ctx := context.Background()
	var out []NamedBenchmark
	// The plain decode runs with boltinformer's readers, whose floor it is.
	synced := map[string]bool{
		ReaderClientGo: e.clientGo != nil, ReaderCR: e.cr != nil,
		ReaderBolt: e.bolt != nil, ReaderBoltHot: e.boltHot != nil, ReaderCRBolt: e.crBolt != nil, ReaderDecode: e.bolt != nil,
	}
	add := func(op, reader string, objects int, f func(b *testing.B)) {
		if synced[reader] {
			out = append(out, NamedBenchmark{Op: op, Reader: reader, Objects: objects, F: f})
		}
	}
	for _, g := range []struct {
		op   string
		keys []string
	}{{"Get/hot100", e.hotKeys}, {"Get/random", e.randomKeys}} {
		keys := g.keys
		for _, ix := range []struct {
			name string
			idx  cache.Indexer
		}{{ReaderClientGo, e.clientGo}, {ReaderBolt, e.bolt}, {ReaderBoltHot, e.boltHot}} {
			idx := ix.idx
			add(g.op, ix.name, 1, func(b *testing.B) {
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					if _, ok, err := idx.GetByKey(keys[i%len(keys)]); !ok || err != nil {
						b.Fatal(keys[i%len(keys)], ok, err)
					}
					i++
				}
			})
		}
		for _, cr := range []struct {
			name string
			r    client.Reader
		}{{ReaderCR, e.cr}, {ReaderCRBolt, e.crBolt}} {
			r := cr.r
			objKeys := make([]client.ObjectKey, len(keys))
			for i, k := range keys {
				ns, name, _ := cache.SplitMetaNamespaceKey(k)
				objKeys[i] = client.ObjectKey{Namespace: ns, Name: name}
			}
			add(g.op, cr.name, 1, func(b *testing.B) {
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					var p v1.Pod
					if err := r.Get(ctx, objKeys[i%len(objKeys)], &p); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
		}
	}

	decode := func(pbs [][]byte) func(b *testing.B) {
		return func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				out := make([]interface{}, 0, len(pbs))
				for _, pb := range pbs {
					p := &v1.Pod{}
					if err := p.Unmarshal(pb); err != nil {
						b.Fatal(err)
					}
					out = append(out, p)
				}
			}
		}
	}
	n := e.N
	add("List/all", ReaderClientGo, n, func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if got := len(e.clientGo.List()); got != n {
				b.Fatal(got)
			}
		}
	})
	add("List/all", ReaderBolt, n, func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if got := len(e.bolt.List()); got != n {
				b.Fatal(got)
			}
		}
	})
	for _, cr := range []struct {
		name string
		r    client.Reader
	}{{ReaderCR, e.cr}, {ReaderCRBolt, e.crBolt}} {
		r := cr.r
		add("List/all", cr.name, n, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var l v1.PodList
				if err := r.List(ctx, &l); err != nil || len(l.Items) != n {
					b.Fatal(len(l.Items), err)
				}
			}
		})
	}
	add("List/all", ReaderDecode, n, decode(e.listPB))

	m := e.nsObjects
	ns := e.Namespace
	for _, ix := range []struct {
		name string
		idx  cache.Indexer
	}{{ReaderClientGo, e.clientGo}, {ReaderBolt, e.bolt}, {ReaderBoltHot, e.boltHot}} {
		idx := ix.idx
		add("ByIndex/namespace", ix.name, m, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				objs, err := idx.ByIndex(cache.NamespaceIndex, ns)
				if err != nil || len(objs) != m {
					b.Fatal(len(objs), err)
				}
			}
		})
	}
	for _, cr := range []struct {
		name string
		r    client.Reader
	}{{ReaderCR, e.cr}, {ReaderCRBolt, e.crBolt}} {
		r := cr.r
		add("ByIndex/namespace", cr.name, m, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var l v1.PodList
				if err := r.List(ctx, &l, client.InNamespace(ns)); err != nil || len(l.Items) != m {
					b.Fatal(len(l.Items), err)
				}
			}
		})
	}
	add("ByIndex/namespace", ReaderDecode, m, decode(e.nsPB))
	return out
}
