package admin_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/boltinformer/boltinformer/internal/admin"
	"github.com/boltinformer/boltinformer/internal/admin/admintest"
	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// errSynced stops a watch after its initial events.
var errSynced = errors.New("synced")

// checkSecretShapes asserts that r serves the Secret of the dynamic and
// the metadata-only stores (whose identity names the resource, not the
// kind) redacted in every form it hands out, shows it only when asked, and
// hides the stores' raw records.
func checkSecretShapes(t *testing.T, r admin.Reader) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// leaks names what of the Secret's value an object's JSON holds.
	leaks := func(u *unstructured.Unstructured) []string {
		b, err := json.Marshal(u.Object)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, v := range []string{admintest.SecretPassword, "aHVudGVyMg=="} {
			if strings.Contains(string(b), v) {
				out = append(out, v)
			}
		}
		return out
	}
	for _, store := range []string{admintest.DynamicSecretStore, admintest.MetadataSecretStore} {
		for _, metadataOnly := range []bool{false, true} {
			for _, show := range []bool{false, true} {
				q := admin.Query{Store: store, Namespace: "default", Name: "db-password", MetadataOnly: metadataOnly, ShowSecrets: show}
				var got []*unstructured.Unstructured
				if err := r.List(ctx, q, func(u *unstructured.Unstructured) error { got = append(got, u); return nil }); err != nil {
					t.Fatalf("%+v: %v", q, err)
				}
				err := r.Watch(ctx, q, func(e admin.Event) error {
					if e.Type == admin.EventSynced {
						return errSynced
					}
					got = append(got, e.Object)
					return nil
				})
				if !errors.Is(err, errSynced) {
					t.Fatalf("%+v: watch: %v", q, err)
				}
				if len(got) != 2 {
					t.Fatalf("%+v: listed and watched %d objects, want 1 each", q, len(got))
				}
				for _, u := range got {
					ann := u.GetAnnotations()[v1.LastAppliedConfigAnnotation]
					if show && ann != admintest.LastApplied {
						t.Errorf("%+v: shown annotation %q", q, ann)
					}
					if leaked := leaks(u); !show && (len(leaked) > 0 || ann != admin.Redacted) {
						t.Errorf("%+v: annotation %q, the object holds %q", q, ann, leaked)
					}
				}
			}
		}
		err := r.Records(ctx, store, false, func(admin.Record) error { return nil })
		if !errors.Is(err, admin.ErrSecretsHidden) {
			t.Errorf("store %s: records without showSecrets: %v", store, err)
		}
		n := 0
		if err := r.Records(ctx, store, true, func(admin.Record) error { n++; return nil }); err != nil || n != 1 {
			t.Errorf("store %s: records with showSecrets: %d, %v", store, n, err)
		}
	}
}

// TestSecretStoresRedactedByResource: the stores of a Secret cached by
// the dynamic and the metadata factories are redacted like a typed Secret
// store, through the socket of the process that writes them and from the
// file read-only: data and the last-applied annotation in every object a
// list or a watch hands out, and their raw records hidden.
func TestSecretStoresRedactedByResource(t *testing.T) {
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
	c, err := admin.Dial(context.Background(), srv.Path(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("socket", func(t *testing.T) { checkSecretShapes(t, c) })
	t.Run("owner", func(t *testing.T) { checkSecretShapes(t, admin.NewLocal(s.DB, s.Dynamic, s.Metadata)) })
	_ = c.Close()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.DB.Close(); err != nil {
		t.Fatal(err)
	}

	l, err := admin.OpenFile(path, cachefile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	t.Run("file", func(t *testing.T) { checkSecretShapes(t, l) })
	// What cachectl's tables read: the decoded objects, redacted copies.
	for _, store := range []string{admintest.DynamicSecretStore, admintest.MetadataSecretStore} {
		q := admin.Query{Store: store, Namespace: "default", Name: "db-password"}
		n := 0
		err := l.ListObjects(context.Background(), q, func(o runtime.Object) error {
			n++
			b, err := json.Marshal(o)
			if err != nil {
				return err
			}
			if strings.Contains(string(b), admintest.SecretPassword) || strings.Contains(string(b), "aHVudGVyMg==") {
				t.Errorf("store %s: ListObjects handed out %s", store, b)
			}
			return nil
		})
		if err != nil || n != 1 {
			t.Fatalf("store %s: ListObjects: %d objects, %v", store, n, err)
		}
	}
}
