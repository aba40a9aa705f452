package bench

import (
	"context"
	"os"
	"sync"
	"testing"
)

// The read benchmarks of the report, for go test -bench and benchstat:
// BenchmarkRead/<op>/<reader>, every reader synced on the same 10k Pods
// (100 per namespace) from an in-process fake apiserver. See ReadEnv for
// the readers and NamedBenchmark for the operations; BENCH_READERS=client-go
// or boltinformer syncs only those readers (NewReadEnv), as make bench
// runs them, each in its own process.

const readBenchN = 10000

var shared struct {
	once   sync.Once
	env    *ReadEnv
	srv    *FakeAPIServer
	dir    string
	cancel context.CancelFunc
	err    error
}

func sharedReadEnv(b *testing.B) *ReadEnv {
	shared.once.Do(func() {
		shared.srv, shared.err = NewFakeAPIServer(FakeOptions{N: readBenchN})
		if shared.err != nil {
			return
		}
		if shared.dir, shared.err = os.MkdirTemp("", "bench-reads-"); shared.err != nil {
			return
		}
		var ctx context.Context
		ctx, shared.cancel = context.WithCancel(context.Background())
		shared.env, shared.err = NewReadEnv(ctx, Target{Host: shared.srv.URL()}, readBenchN, 100, shared.dir, os.Getenv("BENCH_READERS"))
	})
	if shared.err != nil {
		b.Fatal(shared.err)
	}
	return shared.env
}

// closeSharedReadEnv stops what sharedReadEnv started (TestMain, after the run).
func closeSharedReadEnv() {
	if shared.env != nil {
		_ = shared.env.Close()
	}
	if shared.cancel != nil {
		shared.cancel()
	}
	if shared.srv != nil {
		_ = shared.srv.Close()
	}
	if shared.dir != "" {
		_ = os.RemoveAll(shared.dir)
	}
}

func BenchmarkRead(b *testing.B) {
	env := sharedReadEnv(b)
	for _, nb := range env.Benchmarks() {
		b.Run(nb.Name(), nb.F)
	}
}
