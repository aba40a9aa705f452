package boltinformer_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/encryption"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// syncOnce runs one informer per example object against its source until
// it has synced, then stops it and closes the cache.
func syncOnce(t *testing.T, path string, opts boltinformer.Options, sources map[runtime.Object]cache.ListerWatcher) {
	t.Helper()
	c, err := boltinformer.Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(testutil.Context(t))
	var wg sync.WaitGroup
	var synced []cache.InformerSynced
	for obj, lw := range sources {
		inf, err := c.NewInformer(lw, obj, boltinformer.InformerOptions{})
		if err != nil {
			t.Fatal(err)
		}
		synced = append(synced, inf.HasSynced)
		wg.Add(1)
		go func() { defer wg.Done(); inf.RunWithContext(ctx) }()
	}
	syncCtx, syncCancel := context.WithTimeout(ctx, 30*time.Second)
	ok := cache.WaitForCacheSync(syncCtx.Done(), synced...)
	syncCancel()
	cancel()
	wg.Wait()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Fatal("informers did not sync")
	}
}

// TestEncryptionSealsSecretsByDefault: with a key file, a Secret's data is
// never in the file while a ConfigMap's is; AllResources seals both; the
// warm restart reads the sealed objects back.
func TestEncryptionSealsSecretsByDefault(t *testing.T) {
	kc, err := encryption.GenerateKey("k1")
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "keys.yaml")
	if err := os.WriteFile(keyFile, encryption.Format([]encryption.KeyConfig{kc}), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, all := range []bool{false, true} {
		secrets, cms := newSource(t), newSource(t)
		meta := metav1.ObjectMeta{Namespace: "ns", Name: "x"}
		secrets.Add(&v1.Secret{ObjectMeta: meta, Data: map[string][]byte{"password": []byte("hunter2-secret")}})
		cms.Add(&v1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"k": "hunter2-configmap"}})
		path := filepath.Join(t.TempDir(), "cache.db")
		opts := boltinformer.Options{Logger: testutil.Logger(t), NoSync: true, Encryption: &boltinformer.EncryptionOptions{KeyFile: keyFile, AllResources: all}}
		syncOnce(t, path, opts, map[runtime.Object]cache.ListerWatcher{&v1.Secret{}: secrets, &v1.ConfigMap{}: cms})
		want := "[hunter2-configmap]"
		if all {
			want = "[]"
		}
		if found := testutil.FileHolds(t, path, "hunter2-secret", "hunter2-configmap"); fmt.Sprint(found) != want {
			t.Fatalf("all=%v: the file holds %q, want %s", all, found, want)
		}
		// Warm restart with the key: the stored Secret decodes.
		c, err := boltinformer.Open(path, opts)
		if err != nil {
			t.Fatal(err)
		}
		inf, err := c.NewInformer(secrets, &v1.Secret{}, boltinformer.InformerOptions{})
		if err != nil {
			t.Fatal(err)
		}
		obj, ok, err := inf.GetStore().GetByKey("ns/x")
		if err != nil || !ok || string(obj.(*v1.Secret).Data["password"]) != "hunter2-secret" {
			t.Fatalf("all=%v: read back %v %v %v", all, obj, ok, err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := boltinformer.Open(filepath.Join(t.TempDir(), "c.db"), boltinformer.Options{Logger: testutil.Logger(t), Encryption: &boltinformer.EncryptionOptions{}}); !errors.Is(err, encryption.ErrKeyFile) {
		t.Fatalf("encryption without a key: %v", err)
	}
}

// TestOpenFileModes: a new directory is 0700 and a new file 0600; an
// existing file that group or others can read is warned about, and
// TightenFileMode sets it to 0600.
func TestOpenFileModes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new", "cache.db")
	var logs strings.Builder
	logger := funcr.New(func(prefix, args string) { logs.WriteString(args + "\n") }, funcr.Options{})
	open := func(tighten bool) {
		c, err := boltinformer.Open(path, boltinformer.Options{NoSync: true, Logger: logger, TightenFileMode: tighten})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	mode := func(p string) os.FileMode {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Mode().Perm()
	}
	open(false)
	if mode(filepath.Dir(path)) != 0o700 || mode(path) != 0o600 || logs.Len() != 0 {
		t.Fatalf("new: dir %04o file %04o, logs %q", mode(filepath.Dir(path)), mode(path), logs.String())
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	open(false)
	if mode(path) != 0o644 || !strings.Contains(logs.String(), "readable or writable by group or others") || !strings.Contains(logs.String(), "0644") {
		t.Fatalf("loose file: mode %04o, logs %q", mode(path), logs.String())
	}
	open(true)
	if mode(path) != 0o600 || !strings.Contains(logs.String(), "Tightened") {
		t.Fatalf("tightened: mode %04o, logs %q", mode(path), logs.String())
	}
}

// TestEncryptionFollowsTheResource: a key seals the stores of core
// Secrets whatever shape they are cached in (controller-runtime's
// unstructured and metadata-only informers, a metadata-only informer of
// resource secrets without a kind), and not a resource named secrets in
// another group. The value is a Secret's data or the last-applied
// annotation that holds it.
func TestEncryptionFollowsTheResource(t *testing.T) {
	const value = "hunter2-shape"
	logger, _ := ktesting.NewTestContext(t)
	kc, err := encryption.GenerateKey("k1")
	if err != nil {
		t.Fatal(err)
	}
	keys, err := encryption.New([]encryption.KeyConfig{kc})
	if err != nil {
		t.Fatal(err)
	}
	secretGVK := v1.SchemeGroupVersion.WithKind("Secret")
	objMeta := metav1.ObjectMeta{Namespace: "ns", Name: "s", ResourceVersion: "1",
		Annotations: map[string]string{v1.LastAppliedConfigAnnotation: `{"apiVersion":"v1","kind":"Secret","stringData":{"password":"` + value + `"}}`}}
	unstructuredSecret := func() runtime.Object {
		u := &unstructured.Unstructured{Object: map[string]interface{}{"data": map[string]interface{}{"password": value}}}
		u.SetGroupVersionKind(secretGVK)
		u.SetNamespace("ns")
		u.SetName("s")
		u.SetResourceVersion("1")
		return u
	}
	metadataSecret := func() runtime.Object {
		return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: objMeta}
	}
	for _, tc := range []struct {
		name string
		obj  func() runtime.Object
		// newInformer makes the informer of the case on c.
		newInformer func(c *boltinformer.Cache, lw cache.ListerWatcher) (cache.SharedIndexInformer, error)
		sealed      bool
	}{
		{"unstructured with its kind (controller-runtime's)", unstructuredSecret, func(c *boltinformer.Cache, lw cache.ListerWatcher) (cache.SharedIndexInformer, error) {
			example := &unstructured.Unstructured{}
			example.SetGroupVersionKind(secretGVK)
			return c.NewInformer(lw, example, boltinformer.InformerOptions{StoreName: "secrets.v1", Scope: "shape=unstructured"})
		}, true},
		{"metadata-only with its kind (controller-runtime's)", metadataSecret, func(c *boltinformer.Cache, lw cache.ListerWatcher) (cache.SharedIndexInformer, error) {
			example := &metav1.PartialObjectMetadata{}
			example.SetGroupVersionKind(secretGVK)
			return c.NewInformer(lw, example, boltinformer.InformerOptions{StoreName: "metadata:secrets.v1", Scope: "shape=metadata"})
		}, true},
		{"metadata-only without a kind", metadataSecret, func(c *boltinformer.Cache, lw cache.ListerWatcher) (cache.SharedIndexInformer, error) {
			return c.NewInformer(lw, &metav1.PartialObjectMetadata{}, boltinformer.InformerOptions{StoreName: "metadata:secrets.v1", Resource: "secrets"})
		}, true},
		{"unstructured without a kind", unstructuredSecret, func(c *boltinformer.Cache, lw cache.ListerWatcher) (cache.SharedIndexInformer, error) {
			return c.NewInformer(lw, &unstructured.Unstructured{}, boltinformer.InformerOptions{StoreName: "secrets.v1", Resource: "secrets"})
		}, true},
		{"secrets of another group", unstructuredSecret, func(c *boltinformer.Cache, lw cache.ListerWatcher) (cache.SharedIndexInformer, error) {
			return c.NewInformer(lw, &unstructured.Unstructured{}, boltinformer.InformerOptions{StoreName: "secrets.v1.example.com", Resource: "secrets", Group: "example.com"})
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			path := filepath.Join(t.TempDir(), "cache.db")
			c, err := boltinformer.Open(path, boltinformer.Options{NoSync: true, Logger: logger, Encryption: &boltinformer.EncryptionOptions{Keys: keys}})
			if err != nil {
				t.Fatal(err)
			}
			src := newSource(t)
			src.Add(tc.obj())
			inf, err := tc.newInformer(c, src)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(testutil.Context(t))
			done := make(chan struct{})
			go func() { defer close(done); inf.RunWithContext(ctx) }()
			synced := cache.WaitForCacheSync(ctx.Done(), inf.HasSynced)
			cancel()
			<-done
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			if !synced {
				t.Fatal("did not sync")
			}
			if found := testutil.FileHolds(t, path, value); len(found) > 0 == tc.sealed {
				t.Fatalf("sealed %v, but the file holds %q", tc.sealed, found)
			}
		})
	}
	// The group of a kind-less example must not contradict a named kind's.
	c, err := boltinformer.Open(filepath.Join(t.TempDir(), "c.db"), boltinformer.Options{NoSync: true, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.NewInformer(newSource(t), &v1.Secret{}, boltinformer.InformerOptions{Group: "example.com"}); !errors.Is(err, boltinformer.ErrUnknownKind) || !strings.Contains(err.Error(), `"example.com"`) {
		t.Fatalf("Group contradicting the example's: %v", err)
	}
}
