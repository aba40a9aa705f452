package admin

import (
	"encoding/json"
	"fmt"
	goruntime "runtime"

	"golang.org/x/sync/errgroup"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/boltinformer/boltinformer/encryption"
	"github.com/boltinformer/boltinformer/internal/cachefile"
)

// Redacted replaces every value of a Secret's data and stringData, and its
// last-applied-configuration annotation, unless secrets are shown.
const Redacted = "REDACTED"

// lastAppliedAnnotation holds a copy of the applied object, Secret data included.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// normalize turns a decoded object into the JSON form the wire carries:
// apiVersion and kind set (from the store's identity when the object lacks
// them), Secrets redacted unless showSecrets, and, with metadataOnly, only
// apiVersion, kind and metadata (without managedFields). obj is never
// modified (it may be shared with a hot-object cache).
func normalize(obj runtime.Object, id *cachefile.Identity, metadataOnly, showSecrets bool) (*unstructured.Unstructured, error) {
	var data []byte
	var err error
	if metadataOnly {
		m, aerr := meta.Accessor(obj)
		if aerr != nil {
			return nil, fmt.Errorf("object %T: %w", obj, aerr)
		}
		pom := meta.AsPartialObjectMetadata(m)
		pom.ManagedFields = nil
		gvk := obj.GetObjectKind().GroupVersionKind()
		pom.APIVersion, pom.Kind = gvk.GroupVersion().String(), gvk.Kind
		if gvk.Kind == "" {
			pom.APIVersion = ""
		}
		data, err = json.Marshal(pom)
	} else {
		data, err = json.Marshal(obj)
	}
	if err != nil {
		return nil, fmt.Errorf("encode %T: %w", obj, err)
	}
	content := map[string]interface{}{}
	if err := utiljson.Unmarshal(data, &content); err != nil {
		return nil, fmt.Errorf("decode %T: %w", obj, err)
	}
	u := &unstructured.Unstructured{Object: content}
	if u.GetKind() == "" && id != nil && id.Kind != "" {
		u.SetGroupVersionKind(schema.GroupVersionKind{Group: id.Group, Version: id.Version, Kind: id.Kind})
	}
	if !showSecrets {
		redactSecret(content, isSecretStore(id))
	}
	return u, nil
}

// isCoreSecret reports whether content is a core Secret by its own
// apiVersion and kind.
func isCoreSecret(content map[string]interface{}) bool {
	return content["kind"] == "Secret" && content["apiVersion"] == "v1"
}

// redactSecret replaces the values of a core Secret's data and stringData
// and its last-applied-configuration annotation with Redacted: content is
// a Secret when it says so, or, whatever its kind, when it comes from a
// store of Secrets (secretStore), such as a metadata-only one, whose
// objects are PartialObjectMetadata but whose annotation holds the data.
func redactSecret(content map[string]interface{}, secretStore bool) {
	if !secretStore && !isCoreSecret(content) {
		return
	}
	for _, f := range []string{"data", "stringData"} {
		if m, ok := content[f].(map[string]interface{}); ok {
			for k := range m {
				m[k] = Redacted
			}
		}
	}
	if md, ok := content["metadata"].(map[string]interface{}); ok {
		if ann, ok := md["annotations"].(map[string]interface{}); ok {
			if _, ok := ann[lastAppliedAnnotation]; ok {
				ann[lastAppliedAnnotation] = Redacted
			}
		}
	}
}

// redacted returns o, or for a core Secret (or any object of a store of
// Secrets, see redactSecret) a copy of it redacted as redactSecret redacts
// the JSON form (o itself may be shared with a hot-object cache, so it is
// never modified).
func redacted(o runtime.Object, secretStore bool) runtime.Object {
	switch s := o.(type) {
	case *v1.Secret:
		c := s.DeepCopy()
		for k := range c.Data {
			c.Data[k] = []byte(Redacted)
		}
		for k := range c.StringData {
			c.StringData[k] = Redacted
		}
		if _, ok := c.Annotations[lastAppliedAnnotation]; ok {
			c.Annotations[lastAppliedAnnotation] = Redacted
		}
		return c
	case *unstructured.Unstructured:
		if secretStore || isCoreSecret(s.Object) {
			c := s.DeepCopy()
			redactSecret(c.Object, true)
			return c
		}
	default:
		// Another shape of a Secret (metadata-only) has no data, only the annotation.
		if !secretStore {
			return o
		}
		if m, err := meta.Accessor(o); err == nil {
			if _, ok := m.GetAnnotations()[lastAppliedAnnotation]; ok {
				c := o.DeepCopyObject()
				cm, _ := meta.Accessor(c) // a copy of o has o's accessor
				cm.GetAnnotations()[lastAppliedAnnotation] = Redacted
				return c
			}
		}
	}
	return o
}

// isSecretStore reports whether a store's identity is of core Secrets, in
// any shape (encryption.SealedByDefault): its objects are redacted and its
// raw records hidden unless secrets are shown.
func isSecretStore(id *cachefile.Identity) bool {
	return id != nil && encryption.SealedByDefault(id.Group, id.Resource, id.Kind)
}

// jsonObject decodes the payload of a store written with a Go type this
// build does not know (internal/boltstore's typed-JSON codec). It is an
// Unstructured underneath, so metadata accessors and key funcs work on it.
type jsonObject struct {
	unstructured.Unstructured
}

var _ runtime.Object = (*jsonObject)(nil)

// UnmarshalJSON decodes numbers as int64 or float64, as the apimachinery
// JSON decoder does, and needs no kind (typed objects often lack one).
func (o *jsonObject) UnmarshalJSON(b []byte) error {
	o.Object = map[string]interface{}{}
	return utiljson.Unmarshal(b, &o.Object)
}

// native turns what a store returns into an object with metadata.
func native(obj interface{}) (runtime.Object, error) {
	switch o := obj.(type) {
	case *jsonObject:
		return &o.Unstructured, nil
	case runtime.Object:
		return o, nil
	}
	return nil, fmt.Errorf("store returned %T, not a runtime.Object", obj)
}

// normalizeBatch is how many selected objects a List normalizes at once,
// on every core, before it hands them to its caller in order: turning a
// decoded object into an unstructured one (a JSON round trip) costs
// several times its read.
const normalizeBatch = 64

// normalizer normalizes the objects a List selected in batches and calls
// fn with them in the order they were added.
type normalizer struct {
	id                        *cachefile.Identity
	store                     string
	metadataOnly, showSecrets bool
	fn                        func(*unstructured.Unstructured) error

	objs []runtime.Object
	out  []*unstructured.Unstructured
}

func newNormalizer(id *cachefile.Identity, q Query, fn func(*unstructured.Unstructured) error) *normalizer {
	return &normalizer{id: id, store: q.Store, metadataOnly: q.MetadataOnly, showSecrets: q.ShowSecrets, fn: fn,
		objs: make([]runtime.Object, 0, normalizeBatch), out: make([]*unstructured.Unstructured, normalizeBatch)}
}

// add queues o, and normalizes and hands on the batch once it is full.
func (n *normalizer) add(o runtime.Object) error {
	if n.objs = append(n.objs, o); len(n.objs) < normalizeBatch {
		return nil
	}
	return n.flush()
}

// flush normalizes the queued objects and calls fn with each, in order.
func (n *normalizer) flush() error {
	var g errgroup.Group
	g.SetLimit(goruntime.GOMAXPROCS(0))
	for i, o := range n.objs {
		g.Go(func() error {
			u, err := normalize(o, n.id, n.metadataOnly, n.showSecrets)
			if err != nil {
				return fmt.Errorf("store %s: %w", n.store, err)
			}
			n.out[i] = u
			return nil
		})
	}
	err := g.Wait()
	for i := range n.objs {
		if err == nil {
			err = n.fn(n.out[i])
		}
		n.objs[i], n.out[i] = nil, nil
	}
	n.objs = n.objs[:0]
	return err
}
