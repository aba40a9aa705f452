package boltinformer_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// lines is a funcr logger's output.
type lines struct {
	mu  sync.Mutex
	all []string
}

func (l *lines) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.all = append(l.all, prefix+" "+args)
	}, funcr.Options{Verbosity: 10})
}

func (l *lines) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.all...)
}

func (l *lines) has(substr string) bool {
	for _, s := range l.get() {
		if strings.Contains(s, substr) {
			return true
		}
	}
	return false
}

// runLogged runs one informer with iopts on a new cache with opts, its Run
// context carrying ctxLogger, until synced, on a source holding one Pod and
// pods; it then stops it and closes the cache.
func runLogged(t *testing.T, opts boltinformer.Options, ctxLogger logr.Logger, iopts boltinformer.InformerOptions, pods ...*v1.Pod) {
	t.Helper()
	src := newSource(t)
	src.Add(testutil.Pod("ns", "a", "", testutil.Label("app", "a"), testutil.Node("n1")))
	for _, p := range pods {
		src.Add(p)
	}
	opts.NoSync = true
	c, err := boltinformer.Open(filepath.Join(t.TempDir(), "cache.db"), opts)
	if err != nil {
		t.Fatal(err)
	}
	inf, err := c.NewInformer(src, &v1.Pod{}, iopts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), ctxLogger))
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	syncCtx, syncCancel := context.WithTimeout(ctx, 30*time.Second)
	defer syncCancel()
	synced := cache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced)
	cancel()
	<-done
	if !synced {
		t.Fatal("informer did not sync")
	}
	if opts.Logger.GetSink() != nil {
		// The cache's own lines go to Options.Logger; without one they go
		// to the process's klog, which a test leaves alone.
		c.FailedInformer(errors.New("a failed informer"))
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestOptionsLoggerReceivesEveryLine: with Options.Logger set, the
// informer, its reflector and its queue log there (with the store's name),
// and nothing goes to the logger of the Run context.
func TestOptionsLoggerReceivesEveryLine(t *testing.T) {
	var ours, ctxLines lines
	runLogged(t, boltinformer.Options{Logger: ours.logger()}, ctxLines.logger(), boltinformer.InformerOptions{})
	for _, want := range []string{
		`"msg"="Cold start done: listed and stored every object" "store"="Pod.v1"`,
		`"reflector"="Pod.v1"`, // the reflector's own lines, at V(2) and above
		`"msg"="Informer cannot be made"`,
	} {
		if !ours.has(want) {
			t.Errorf("Options.Logger has no line with %s; it has:\n%s", want, strings.Join(ours.get(), "\n"))
		}
	}
	if got := ctxLines.get(); len(got) > 0 {
		t.Errorf("the Run context's logger got %d lines although Options.Logger is set:\n%s", len(got), strings.Join(got, "\n"))
	}
}

// TestZeroLoggerLogsToRunContext: without Options.Logger the informer logs
// to its Run context's logger, as client-go's informers do.
func TestZeroLoggerLogsToRunContext(t *testing.T) {
	var ctxLines lines
	runLogged(t, boltinformer.Options{}, ctxLines.logger(), boltinformer.InformerOptions{})
	if !ctxLines.has(`"msg"="Cold start done: listed and stored every object" "store"="Pod.v1"`) {
		t.Errorf("the Run context's logger lacks the informer's lines:\n%s", strings.Join(ctxLines.get(), "\n"))
	}
}

// TestZeroLoggerLogsProcessLoopToRunContext: without Options.Logger, what
// the process loop logs about the objects it applies (here a Pod the store
// refuses, since its IndexFunc fails) goes to the Run context's logger
// too, not to the process's klog.
func TestZeroLoggerLogsProcessLoopToRunContext(t *testing.T) {
	var ctxLines lines
	refused := testutil.Pod("ns", "b", "", testutil.Label("refuse", "yes"))
	runLogged(t, boltinformer.Options{}, ctxLines.logger(), boltinformer.InformerOptions{Indexers: cache.Indexers{"node": refusing}}, refused)
	if !ctxLines.has(`"msg"="Dropping an object the store cannot hold"`) {
		t.Errorf("the Run context's logger lacks the refused object's line:\n%s", strings.Join(ctxLines.get(), "\n"))
	}
}
