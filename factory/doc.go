// Package factory makes client-go's informer factories on a boltinformer
// cache file: NewSharedInformerFactory returns an informers.SharedInformerFactory
// (the generated factory.Core().V1().Pods().Informer()/Lister() work
// unchanged), NewDynamicSharedInformerFactory a
// dynamicinformer.DynamicSharedInformerFactory (CRDs, unstructured) and
// NewMetadataSharedInformerFactory a metadatainformer.SharedInformerFactory
// (PartialObjectMetadata). Switching an existing controller changes the
// line that makes the factory (c comes from boltinformer.Open):
//
//	f := informers.NewSharedInformerFactory(client, 10*time.Minute)
//	f := factory.NewSharedInformerFactory(c, client, 10*time.Minute)
//
// and the options it is given: they are this package's Option, so
// client-go's informers.WithNamespace(ns) does not compile here; pass
// WithNamespace(ns), and likewise WithTweakListOptions, WithTransform and
// WithCustomResyncConfig, to NewSharedInformerFactoryWithOptions.
//
// Every informer a factory makes is a *boltinformer.Informer whose
// ListerWatcher makes exactly the requests client-go's generated informer
// would (the same typed, dynamic or metadata client call, namespace and
// tweaked list options), so its store lives in the cache file and a
// restarted process resumes its WATCH instead of listing again. A typed
// informer on a real clientset makes those requests through
// reflector.ListWatch, which decodes each WATCH response on every core and
// lets the store write each object's protobuf bytes as the apiserver sent
// them, instead of one goroutine decoding and the store encoding again. The
// generated accessors (Pods().Informer()) wrap it in client-go's typed
// informer; InformerFor(&v1.Pod{}, nil) and ForResource return it as is.
// An informer that cannot be made (a duplicate store, an unknown type)
// reports why through the cache's logger and never syncs, so that
// WaitForCacheSync fails instead of the program caching nothing silently.
//
// A factory's namespace, tweaked list options and transform are part of
// each store's name (see StoreName), so two factories with different
// selectors on one file never share a store, and a changed selector starts
// a new store instead of resuming one that holds objects it no longer
// matches. Stores a program no longer uses stay in the file until removed.
//
// This package never talks to the apiserver itself and never starts a
// goroutine outside Start/StartWithContext, which Shutdown waits for.
package factory
