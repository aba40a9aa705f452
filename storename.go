package boltinformer

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/boltinformer/boltinformer/internal/cachefile"
)

// DefaultStoreName is the store name an informer of gvk gets when
// InformerOptions.StoreName is empty: Kind.version.group ("Pod.v1",
// "Deployment.v1.apps").
func DefaultStoreName(gvk schema.GroupVersionKind) string { return storeNameFor(gvk) }

// ScopedStoreName names the store of an informer that lists and watches
// with a namespace, list options or a transform: base ("Pod.v1",
// "pods.v1", "metadata:pods.v1") followed, when any is set, by the
// namespace, the label and field selectors, a hash of the other list
// options, and the transform's name, quoted so that two different scopes
// never give one name:
//
//	Pod.v1{namespace="default",labels="app=web"}
//
// The informer factories and package ctrlcache name their stores with it,
// so that one scope has one name whichever of them made the informer.
func ScopedStoreName(base, namespace string, list metav1.ListOptions, transform string) string {
	var q []string
	add := func(k, v string) { q = append(q, k+"="+strconv.Quote(v)) }
	if namespace != "" {
		add("namespace", namespace)
	}
	if list.LabelSelector != "" {
		add("labels", list.LabelSelector)
	}
	if list.FieldSelector != "" {
		add("fields", list.FieldSelector)
	}
	rest := list
	rest.LabelSelector, rest.FieldSelector = "", ""
	if !reflect.DeepEqual(rest, metav1.ListOptions{}) {
		b, _ := json.Marshal(rest) // ListOptions always marshals
		sum := sha256.Sum256(b)
		add("options", hex.EncodeToString(sum[:6]))
	}
	if transform != "" {
		add("transform", transform)
	}
	if len(q) == 0 {
		return base
	}
	return base + "{" + strings.Join(q, ",") + "}"
}

// storeIdentity is the identity of an informer's store. Its group is the
// resource's: the example object's, or, when the example does not name its
// kind (dynamic and metadata-only informers), InformerOptions.Group.
func storeIdentity(gvk schema.GroupVersionKind, opts InformerOptions) (*cachefile.Identity, error) {
	group := opts.Group
	if gvk.Kind != "" {
		if opts.Group != "" && opts.Group != gvk.Group {
			return nil, fmt.Errorf("%w: InformerOptions.Group %q differs from the example object's group %q", ErrUnknownKind, opts.Group, gvk.Group)
		}
		group = gvk.Group
	}
	return &cachefile.Identity{
		Group: group, Version: gvk.Version, Kind: gvk.Kind, Resource: opts.Resource,
		Namespace: opts.Namespace, LabelSelector: opts.LabelSelector, FieldSelector: opts.FieldSelector,
		Scope: opts.Scope,
	}, nil
}
