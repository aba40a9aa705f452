package boltinformer_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
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
	c, err := boltinformer.Open(filepath.Join(dir, "c.db"), boltinformer.Options{Logger: testutil.Logger(t), NoSync: true, AdminSocket: sock})
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
	ctx, cancel := context.WithCancel(testutil.Context(t))
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

// TestAdminSocketDirectory: Open creates a missing directory for the admin
// socket as it does for the file (mode 0700), and an admin socket it cannot
// serve is an error that says "admin socket" once.
func TestAdminSocketDirectory(t *testing.T) {
	dir := testutil.ShortTempDir(t)
	sock := filepath.Join(dir, "run", "agent", "admin.sock")
	c, err := boltinformer.Open(filepath.Join(dir, "cache", "c.db"), boltinformer.Options{Logger: testutil.Logger(t), NoSync: true, AdminSocket: sock})
	if err != nil {
		t.Fatalf("Open with the admin socket in a missing directory: %v", err)
	}
	for _, d := range []string{filepath.Join(dir, "run"), filepath.Join(dir, "run", "agent"), filepath.Join(dir, "cache")} {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v, mode %v; want a directory of mode 0700", d, err, fi.Mode())
		}
	}
	client, err := admin.Dial(context.Background(), sock, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Info(context.Background()); err != nil {
		t.Fatalf("info over the socket: %v", err)
	}
	client.Close()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, sock string
		is         error
	}{
		{"too long a path", filepath.Join(dir, strings.Repeat("x", 120)), admin.ErrSocketPath},
		{"under a regular file", filepath.Join(plain, "admin.sock"), admin.ErrSocketPath},
		{"a regular file", plain, admin.ErrNotSocket},
	} {
		_, err := boltinformer.Open(filepath.Join(dir, tc.name+".db"), boltinformer.Options{Logger: testutil.Logger(t), NoSync: true, AdminSocket: tc.sock})
		if !errors.Is(err, tc.is) || strings.Count(err.Error(), "admin socket") != 1 {
			t.Errorf("%s: %v; want %v, saying \"admin socket\" once", tc.name, err, tc.is)
		}
	}
}
