package crcache_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.uber.org/goleak"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/ctrlcache"
	"github.com/boltinformer/boltinformer/internal/testcluster"
)

// TestMain points envtest at the etcd and kube-apiserver of this
// repository's bin/, whatever KUBEBUILDER_ASSETS the environment had, and
// checks that no goroutine outlives the suite.
func TestMain(m *testing.M) {
	dir, err := testcluster.BinDir()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := os.Setenv("KUBEBUILDER_ASSETS", dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if code == 0 {
		// Ginkgo's interrupt handler runs for the life of the process.
		if err := goleak.Find(goleak.IgnoreTopFunction("github.com/onsi/ginkgo/v2/internal/interrupt_handler.(*InterruptHandler).registerForInterrupts.func2")); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// newCache stands in for controller-runtime's cache.New in every spec: the
// cache ctrlcache makes from cfg and opts, on a new file.
func newCache(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
	bc, err := boltinformer.Open(filepath.Join(GinkgoT().TempDir(), "cache.db"), boltinformer.Options{NoSync: true, Logger: GinkgoLogr})
	if err != nil {
		return nil, err
	}
	// The specs cancel a cache's context without waiting for its informers
	// to return; the file closes once they have.
	DeferCleanup(func(ctx SpecContext) {
		Eventually(ctx, bc.Close).Should(Succeed())
	})
	return ctrlcache.NewCache(bc, ctrlcache.Options{})(cfg, opts)
}
