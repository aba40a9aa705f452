package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/boltinformer/boltinformer/internal/admin"
	"github.com/boltinformer/boltinformer/internal/admin/admintest"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// TestGetSecretShapesRedacted: a Secret cached by the dynamic and the
// metadata factories (stores known by resource, not kind) prints without
// its data and last-applied annotation in every output format, from the
// file and through the owner's socket, unless --show-secrets.
func TestGetSecretShapesRedacted(t *testing.T) {
	dir := testutil.ShortTempDir(t)
	path := filepath.Join(dir, "cache.db")
	s, err := admintest.OpenSecretShapes(path)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := admin.NewServer(filepath.Join(dir, "admin.sock"), s.DB, s.Dynamic, s.Metadata)
	if err != nil {
		t.Fatal(err)
	}
	snap := filepath.Join(dir, "snap")
	cachectl(t, "snapshot", "save", snap, "--socket", srv.Path()).ok(t)
	copied := filepath.Join(dir, "copy.db")
	cachectl(t, "snapshot", "restore", snap, "--db", copied).ok(t)
	sources := [][]string{{"--socket", srv.Path()}, {"--db", copied}}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Error(err)
		}
		_ = s.DB.Close()
	})
	plaintexts := []string{admintest.SecretPassword, "aHVudGVyMg=="}
	for _, store := range []string{admintest.DynamicSecretStore, admintest.MetadataSecretStore} {
		for _, output := range []string{"", "wide", "json", "yaml", "name", "jsonpath={.metadata.annotations}",
			"jsonpath-as-json={.metadata}", "go-template={{.metadata.annotations}}", "custom-columns=A:.metadata.annotations"} {
			for _, src := range sources {
				args := append([]string{"get", store, "db-password", "-n", "default", "-o", output}, src...)
				out := cachectl(t, args...).ok(t).stdout
				for _, p := range plaintexts {
					if strings.Contains(out, p) {
						t.Errorf("%s prints %q:\n%s", strings.Join(args, " "), p, out)
					}
				}
			}
		}
		for _, src := range sources {
			args := append([]string{"get", store, "db-password", "-n", "default", "-o", "jsonpath={.metadata.annotations}", "--show-secrets"}, src...)
			if out := cachectl(t, args...).ok(t).stdout; !strings.Contains(out, "aHVudGVyMg==") {
				t.Errorf("%s does not show the annotation:\n%s", strings.Join(args, " "), out)
			}
		}
	}
}
