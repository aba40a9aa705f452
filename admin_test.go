package boltinformer_test

import (
	"context"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/internal/admin"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// TestAdminSocketServesLiveCache: a cache opened with AdminSocket answers
// queries for its informers' stores while it holds the file.
func TestAdminSocketServesLiveCache(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "admin.sock")
	c, err := boltinformer.Open(filepath.Join(dir, "c.db"), boltinformer.Options{NoSync: true, AdminSocket: sock})
	if err != nil {
		t.Fatal(err)
	}
	src := newSource(t)
	src.Add(testutil.Pod("ns", "a", "", testutil.Label("app", "a"), testutil.Node("n1")))
	src.Add(testutil.Pod("ns", "b", "", testutil.Label("app", "b"), testutil.Node("n1")))
	inf, err := c.NewInformer(src, &v1.Pod{}, boltinformer.InformerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	testutil.Eventually(t, "sync", waitTimeout, inf.HasSynced)

	client, err := admin.Dial(ctx, sock, 0)
	if err != nil {
		t.Fatal(err)
	}
	info, err := client.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Stores) != 1 || info.Stores[0].Objects != 2 {
		t.Fatalf("info over the socket: %+v", info)
	}
	cancel()
	<-done
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}
