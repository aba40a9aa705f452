package admin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// TestServerRefusesOtherUIDs: a connection from a uid the server does not
// trust is closed unanswered (SO_PEERCRED), one from the owner is served;
// a second server on a live socket names the process holding it; a stale
// socket file is replaced.
func TestServerRefusesOtherUIDs(t *testing.T) {
	dir := testutil.ShortTempDir(t)
	db, err := cachefile.Open(filepath.Join(dir, "cache.db"), cachefile.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sock := filepath.Join(dir, "admin.sock")

	// A stale socket file (its process died) is no obstacle.
	testutil.StaleSocket(t, sock)
	srv, err := NewServer(sock, db)
	if err != nil {
		t.Fatalf("stale socket: %v", err)
	}
	defer srv.Close()

	_, err = NewServer(sock, db)
	if !errors.Is(err, ErrSocketInUse) || !strings.Contains(err.Error(), fmt.Sprintf("process %d, uid %d", os.Getpid(), os.Getuid())) {
		t.Fatalf("live socket: %v", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	info := func() error {
		c, err := Dial(ctx, sock, 5*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.Info(ctx)
		return err
	}
	if err := info(); err != nil {
		t.Fatalf("owner: %v", err)
	}
	other := []uint32{uint32(os.Getuid()) + 4242}
	saved := trustedUIDs.Swap(&other)
	err = info()
	trustedUIDs.Store(saved)
	if err == nil || srv.listener.refused.Load() < 1 {
		t.Fatalf("untrusted uid: err %v, refused %d", err, srv.listener.refused.Load())
	}
	if err := info(); err != nil {
		t.Fatalf("owner again: %v", err)
	}
}
