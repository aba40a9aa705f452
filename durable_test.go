package boltinformer_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// TestNewFileDurableAtFirstSync: a file this Open creates is built without
// fsync behind its marker, and is durable (marker gone) by the time
// HasSynced is true; a file that exists is opened durable.
func TestNewFileDurableAtFirstSync(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	src := newSource(t)
	for i := range 20 {
		src.Add(testutil.Pod("ns", fmt.Sprint("p", i), ""))
	}
	c, err := boltinformer.Open(path, boltinformer.Options{Logger: testutil.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	marked := func() bool { _, err := os.Lstat(cachefile.MarkerPath(path)); return err == nil }
	if !c.DBForTest().Unsynced() || !marked() {
		t.Fatalf("a new file: Unsynced %v, marker %v; want both", c.DBForTest().Unsynced(), marked())
	}
	inf, err := c.NewInformer(src, &v1.Pod{}, boltinformer.InformerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(testutil.Context(t))
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	select {
	case <-inf.HasSyncedChecker().Done():
	case <-done:
		t.Fatal("Run returned before HasSynced")
	}
	// No wait: the file must be durable the moment HasSynced is true.
	if c.DBForTest().Unsynced() || marked() {
		t.Errorf("HasSynced is true, but Unsynced %v, marker %v", c.DBForTest().Unsynced(), marked())
	}
	cancel()
	<-done
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c, err = boltinformer.Open(path, boltinformer.Options{Logger: testutil.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.DBForTest().Unsynced() || marked() {
		t.Fatalf("an existing file: Unsynced %v, marker %v; want neither", c.DBForTest().Unsynced(), marked())
	}
}
