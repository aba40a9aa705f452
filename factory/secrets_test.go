package factory_test

import (
	"context"
	"encoding/base64"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/encryption"
	"github.com/boltinformer/boltinformer/factory"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

var (
	secretsGVR    = v1.SchemeGroupVersion.WithResource("secrets")
	configMapsGVR = v1.SchemeGroupVersion.WithResource("configmaps")
	// crdSecretsGVR is a custom resource that happens to be named secrets.
	crdSecretsGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "secrets"}
)

// TestResourceFactoriesSealSecrets: with a key configured, a Secret
// cached by the dynamic factory (unstructured) or the metadata factory
// (metadata-only, its last-applied annotation holding the whole Secret)
// is sealed: its value is nowhere in the file, free pages included. A
// ConfigMap and a custom resource named secrets in another group stay
// plaintext, which shows the scan finds what is there.
func TestResourceFactoriesSealSecrets(t *testing.T) {
	const value, cmValue, crdValue = "hunter2-factory", "plain-configmap", "plain-crd-secret"
	encoded := base64.StdEncoding.EncodeToString([]byte(value))
	lastApplied := `{"apiVersion":"v1","data":{"password":"` + encoded + `"},"kind":"Secret","metadata":{"annotations":{},"name":"s","namespace":"ns"},"type":"Opaque"}` + "\n"
	obj := func(apiVersion, kind string, fields map[string]interface{}) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": apiVersion, "kind": kind,
			"metadata": map[string]interface{}{"namespace": "ns", "name": "s", "resourceVersion": "1"}}}
		for k, v := range fields {
			u.Object[k] = v
		}
		return u
	}
	secret := obj("v1", "Secret", map[string]interface{}{"type": "Opaque", "data": map[string]interface{}{"password": encoded}})
	secret.SetAnnotations(map[string]string{v1.LastAppliedConfigAnnotation: lastApplied})
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{secretsGVR: "SecretList", configMapsGVR: "ConfigMapList", crdSecretsGVR: "SecretList"},
		secret,
		obj("v1", "ConfigMap", map[string]interface{}{"data": map[string]interface{}{"k": cmValue}}),
		obj("example.com/v1", "Secret", map[string]interface{}{"spec": map[string]interface{}{"k": crdValue}}),
	)
	metaScheme := metadatafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(metaScheme); err != nil {
		t.Fatal(err)
	}
	meta := metadatafake.NewSimpleMetadataClient(metaScheme, &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", ResourceVersion: "1", Annotations: map[string]string{v1.LastAppliedConfigAnnotation: lastApplied}},
	})

	kc, err := encryption.GenerateKey("k1")
	if err != nil {
		t.Fatal(err)
	}
	keys, err := encryption.New([]encryption.KeyConfig{kc})
	if err != nil {
		t.Fatal(err)
	}
	logger, _ := ktesting.NewTestContext(t)
	path := filepath.Join(t.TempDir(), "cache.db")
	c, err := boltinformer.Open(path, boltinformer.Options{NoSync: true, Logger: logger, Encryption: &boltinformer.EncryptionOptions{Keys: keys}})
	if err != nil {
		t.Fatal(err)
	}
	df := factory.NewDynamicSharedInformerFactory(c, dyn, 0)
	mf := factory.NewMetadataSharedInformerFactory(c, meta, 0)
	informers := map[string]cache.SharedIndexInformer{
		"dynamic secrets":     df.ForResource(secretsGVR).Informer(),
		"dynamic configmaps":  df.ForResource(configMapsGVR).Informer(),
		"dynamic crd secrets": df.ForResource(crdSecretsGVR).Informer(),
		"metadata secrets":    mf.ForResource(secretsGVR).Informer(),
	}
	ctx, cancel := context.WithCancel(context.Background())
	df.Start(ctx.Done())
	mf.Start(ctx.Done())
	for name, inf := range informers {
		if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			t.Fatalf("%s did not sync", name)
		}
		// Read back with the key.
		if _, ok, err := inf.GetStore().GetByKey("ns/s"); err != nil || !ok {
			t.Fatalf("%s: get ns/s: %v %v", name, ok, err)
		}
	}
	got, _, _ := informers["metadata secrets"].GetStore().GetByKey("ns/s")
	if a := got.(*metav1.PartialObjectMetadata).Annotations[v1.LastAppliedConfigAnnotation]; a != lastApplied {
		t.Fatalf("metadata Secret read back with annotation %q", a)
	}
	cancel()
	df.Shutdown()
	mf.Shutdown()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	found := testutil.FileHolds(t, path, value, encoded, cmValue, crdValue)
	if len(found) != 2 || found[0] != cmValue || found[1] != crdValue {
		t.Fatalf("the file holds %q, want only the ConfigMap's and the custom resource's values", found)
	}
}
