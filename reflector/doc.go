// Package reflector holds ListWatch, the ListerWatcher boltinformer's
// factories give the informers they make, one per resource: it makes the
// LIST and WATCH requests client-go's generated clients make and decodes each
// WATCH response on every core, its events in the order the apiserver sent
// them. It also implements cache.ListerWatcher for client-go's own
// informers. The package holds WatchListMode too, which chooses how an
// informer relists (boltinformer.InformerOptions.WatchList).
//
// The reflector itself, which keeps an informer's queue current through a
// ListerWatcher, is internal (internal/listwatcher). This package must never
// hold an informer's state, nor change an object it decodes.
package reflector
