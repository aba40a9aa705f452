package bench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"sort"
	"testing"
	"time"
)

// A read benchmark of manyObjects or more objects per op runs
// manyObjectsBenchTime times the benchtime (see runReads).
const (
	manyObjects          = 1000
	manyObjectsBenchTime = 5
)

// runReads syncs every reader and runs each benchmark Count times,
// interleaved (run 1 of every benchmark, then run 2, ...) so that a burst
// of load on the machine does not hit one reader only.
func runReads(ctx context.Context, spec Spec) (Result, error) {
	res := Result{Scenario: spec.Scenario, Impl: spec.Impl, StartedAt: time.Now().UnixNano()}
	prof, err := startProfiles(spec.ProfileDir)
	if err != nil {
		return res, err
	}
	defer prof.stop()
	testing.Init()
	bt := spec.BenchTime
	if bt <= 0 {
		bt = time.Second
	}
	count := max(spec.Count, 1)
	dir := spec.DB
	if dir == "" {
		return res, errors.New("reads: no directory for the cache files (Spec.DB)")
	}
	env, err := NewReadEnv(ctx, spec.Target, spec.ExpectAdds, max(spec.Namespaces, 1), dir, spec.Impl)
	if err != nil {
		return res, err
	}
	defer env.Close()
	benches := env.Benchmarks()
	runs := make([][]testing.BenchmarkResult, len(benches))
	for range count {
		for i, nb := range benches {
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			// A read of many objects allocates their whole size per op:
			// at 1s it runs a few ops, and whether a GC of the 400 MB the
			// in-memory readers hold lands in one of them swings its
			// ns/op by 20%. A longer run averages over many cycles.
			t := bt
			if nb.Objects >= manyObjects {
				t *= manyObjectsBenchTime
			}
			if err := flag.Set("test.benchtime", t.String()); err != nil {
				return res, err
			}
			runs[i] = append(runs[i], testing.Benchmark(nb.F))
		}
	}
	for i, nb := range benches {
		r := runs[i]
		sort.Slice(r, func(a, b int) bool { return nsPerOp(r[a]) < nsPerOp(r[b]) })
		med := r[len(r)/2]
		if med.N == 0 {
			return res, fmt.Errorf("benchmark %s failed", nb.Name())
		}
		res.Reads = append(res.Reads, ReadResult{
			Name: nb.Name(), Op: nb.Op, Reader: nb.Reader, Objects: nb.Objects,
			NsPerOp: nsPerOp(med), AllocsPerOp: med.AllocsPerOp(), BytesPerOp: med.AllocedBytesPerOp(),
		})
	}
	return res, env.Close()
}

func nsPerOp(r testing.BenchmarkResult) float64 {
	if r.N == 0 {
		return 0
	}
	return float64(r.T.Nanoseconds()) / float64(r.N)
}
