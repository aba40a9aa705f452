package bench

import (
	"fmt"
	"runtime"
	"testing"
)

// BenchmarkReplay10k is the warm-start replay of 10k Pods (decode and check
// every record), on one core and on every core.
func BenchmarkReplay10k(b *testing.B) {
	s := openStore(b, 0)
	fill(b, s, 10000)
	for _, procs := range []int{1, runtime.NumCPU()} {
		b.Run(fmt.Sprintf("procs=%d", procs), func(b *testing.B) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			for b.Loop() {
				n := 0
				err := s.Replay(func(interface{}) error { n++; return nil }, func(key string, err error) error { return err })
				if err != nil || n != 10000 {
					b.Fatalf("replayed %d: %v", n, err)
				}
			}
		})
	}
}
