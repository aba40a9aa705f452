// Package bench measures boltinformer side by side with client-go's
// in-memory informer and indexer, in the same run on the same objects.
// Timings on shared 2-core machines are noisy: compare ratios, not absolute
// figures. `make bench` runs everything here.
package bench
