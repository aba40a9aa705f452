package e2e

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/encryption"
	"github.com/boltinformer/boltinformer/factory"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// appliedSecret is the Secret ns/name holding password as `kubectl apply`
// leaves it: with the last-applied-configuration annotation, the whole
// applied object, data included.
func appliedSecret(t *testing.T, ns, name, password string) *v1.Secret {
	t.Helper()
	applied := &v1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{}},
		Type:       v1.SecretTypeOpaque,
		Data:       map[string][]byte{"password": []byte(password)},
	}
	b, err := json.Marshal(applied)
	if err != nil {
		t.Fatal(err)
	}
	s := applied.DeepCopy()
	s.Annotations = map[string]string{v1.LastAppliedConfigAnnotation: string(b) + "\n"}
	return s
}

// TestFactoriesSealSecretsAtRest caches a Secret made kubectl-apply style
// through the dynamic and the metadata factories with a key file, changes
// it, and finds neither password, nor its base64, anywhere in the file:
// not in the dynamic store's data, not in the metadata store's
// last-applied annotation, not in the pages the first version was freed
// from. A ConfigMap's value is found, so the scan sees what is there.
func TestFactoriesSealSecretsAtRest(t *testing.T) {
	c := sharedCluster(t)
	cl := newClient(t, c)
	ns := newNamespace(t, cl, "e2e-secrets")
	ctx := cl.ctx
	const first, second, cmValue = "e2e-hunter2-first", "e2e-hunter2-second", "e2e-plain-configmap"
	created, err := cl.CoreV1().Secrets(ns).Create(ctx, appliedSecret(t, ns, "db", first), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "plain"}, Data: map[string]string{"k": cmValue}}
	if _, err := cl.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	kc, err := encryption.GenerateKey("k1")
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "keys.yaml")
	if err := os.WriteFile(keyFile, encryption.Format([]encryption.KeyConfig{kc}), encryption.FileMode); err != nil {
		t.Fatal(err)
	}
	logger, _ := ktesting.NewTestContext(t)
	path := filepath.Join(t.TempDir(), "cache.db")
	bc, err := boltinformer.Open(path, boltinformer.Options{NoSync: true, Logger: logger,
		Encryption: &boltinformer.EncryptionOptions{KeyFile: keyFile}})
	if err != nil {
		t.Fatal(err)
	}
	r := &factoryRun{t: t, path: path, cache: bc}
	t.Cleanup(r.stop)

	secrets, configMaps := v1.SchemeGroupVersion.WithResource("secrets"), v1.SchemeGroupVersion.WithResource("configmaps")
	cfg, hc, dlog := loggedConfig(t, c)
	dc, err := dynamic.NewForConfigAndClient(cfg, hc)
	if err != nil {
		t.Fatal(err)
	}
	df := factory.NewFilteredDynamicSharedInformerFactory(bc, dc, 0, ns, nil)
	df.ForResource(configMaps)
	dynSecrets := r.startGeneric(t, df, secrets, fmt.Sprintf("secrets.v1{namespace=%q}", ns), dlog, 1)
	cfg, hc, mlog := loggedConfig(t, c)
	mc, err := metadata.NewForConfigAndClient(cfg, hc)
	if err != nil {
		t.Fatal(err)
	}
	mf := factory.NewFilteredMetadataSharedInformerFactory(bc, mc, 0, ns, nil)
	metaSecrets := r.startGeneric(t, mf, secrets, fmt.Sprintf("metadata:secrets.v1{namespace=%q}", ns), mlog, 1)

	// Change the Secret as a second kubectl apply would: the first
	// version's pages are freed.
	update := appliedSecret(t, ns, "db", second)
	update.ResourceVersion = created.ResourceVersion
	updated, err := cl.CoreV1().Secrets(ns).Update(ctx, update, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	testutil.EventuallyDiff(t, "both stores to hold the changed Secret", convergeTimeout, func() string {
		var out []string
		for name, l := range map[string]cache.GenericLister{"dynamic": dynSecrets, "metadata": metaSecrets} {
			o, err := l.ByNamespace(ns).Get("db")
			if err != nil {
				out = append(out, fmt.Sprintf("%s: %v", name, err))
			} else if rv := testutil.RVOf(o); rv != updated.ResourceVersion {
				out = append(out, fmt.Sprintf("%s: at RV %s, want %s", name, rv, updated.ResourceVersion))
			}
		}
		sort.Strings(out)
		return strings.Join(out, "; ")
	})
	// With the key, the stores read back the Secret as the apiserver has it.
	o, err := dynSecrets.ByNamespace(ns).Get("db")
	if err != nil {
		t.Fatal(err)
	}
	if got, _, _ := unstructured.NestedString(o.(*unstructured.Unstructured).Object, "data", "password"); got != base64.StdEncoding.EncodeToString([]byte(second)) {
		t.Fatalf("dynamic store's password %q", got)
	}
	if o, err = metaSecrets.ByNamespace(ns).Get("db"); err != nil {
		t.Fatal(err)
	}
	if got := o.(*metav1.PartialObjectMetadata).Annotations[v1.LastAppliedConfigAnnotation]; got != updated.Annotations[v1.LastAppliedConfigAnnotation] {
		t.Fatalf("metadata store's last-applied annotation %q, want %q", got, updated.Annotations[v1.LastAppliedConfigAnnotation])
	}
	r.stop()

	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	found := testutil.FileHolds(t, path, first, second, b64(first), b64(second), cmValue)
	if len(found) != 1 || found[0] != cmValue {
		t.Fatalf("the file holds %q, want only the ConfigMap's value", found)
	}
}
