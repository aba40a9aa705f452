package ctrlcache

import (
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer"
)

// sharedInformer is the informer of a type whose objects controller-runtime's
// reader hands out as they are, uncopied (UnsafeDisableDeepCopy). Its
// indexer keeps the object it returned for each key, so that every read of
// one version of an object returns the same object, and a change a caller
// makes to it shows in the next read, as with controller-runtime's own
// informers. The objects it returned stay on the heap.
type sharedInformer struct {
	*boltinformer.Informer
	indexer *sharedIndexer
}

func newSharedInformer(inf *boltinformer.Informer) (*sharedInformer, error) {
	s := &sharedInformer{Informer: inf, indexer: &sharedIndexer{Indexer: inf.GetIndexer(), objs: map[string]interface{}{}}}
	// A deleted object's key is forgotten.
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: s.indexer.forget})
	return s, err
}

func (s *sharedInformer) GetStore() cache.Store     { return s.indexer }
func (s *sharedInformer) GetIndexer() cache.Indexer { return s.indexer }

// sharedIndexer is a cache.Indexer that returns, for every object the
// store gives, the object it returned before for the same key, UID and
// resourceVersion, if any.
type sharedIndexer struct {
	cache.Indexer

	// mu guards objs: the object last returned for each key.
	mu   sync.Mutex
	objs map[string]interface{}
}

// share returns the object held for obj's key when it is the same version
// of the same object, and otherwise holds and returns obj.
func (s *sharedIndexer) share(obj interface{}) interface{} {
	m, err := meta.Accessor(obj)
	if err != nil {
		return obj
	}
	key, err := cache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		return obj
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if held, ok := s.objs[key]; ok {
		if hm, err := meta.Accessor(held); err == nil && hm.GetUID() == m.GetUID() && hm.GetResourceVersion() == m.GetResourceVersion() {
			return held
		}
	}
	s.objs[key] = obj
	return obj
}

func (s *sharedIndexer) shareAll(objs []interface{}) []interface{} {
	for i, o := range objs {
		objs[i] = s.share(o)
	}
	return objs
}

// forget drops the object held for a deleted object's key.
func (s *sharedIndexer) forget(obj interface{}) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.objs, key)
}

func (s *sharedIndexer) Get(obj interface{}) (interface{}, bool, error) {
	got, ok, err := s.Indexer.Get(obj)
	if !ok || err != nil {
		return got, ok, err
	}
	return s.share(got), true, nil
}

func (s *sharedIndexer) GetByKey(key string) (interface{}, bool, error) {
	got, ok, err := s.Indexer.GetByKey(key)
	if !ok || err != nil {
		return got, ok, err
	}
	return s.share(got), true, nil
}

func (s *sharedIndexer) List() []interface{} { return s.shareAll(s.Indexer.List()) }

func (s *sharedIndexer) ByIndex(indexName, indexedValue string) ([]interface{}, error) {
	objs, err := s.Indexer.ByIndex(indexName, indexedValue)
	return s.shareAll(objs), err
}

func (s *sharedIndexer) Index(indexName string, obj interface{}) ([]interface{}, error) {
	objs, err := s.Indexer.Index(indexName, obj)
	return s.shareAll(objs), err
}
