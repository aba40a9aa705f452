package admin

import (
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/boltinformer/boltinformer/internal/cachefile"
)

// Query selects objects of one store, with the meaning kubectl gives the
// same flags. It is carried as the query string of
// GET /v1/stores/{store}/objects (see Values and ParseQuery).
type Query struct {
	// Store is the store's name in the file.
	Store string
	// Namespace restricts the result to one namespace ("" is every
	// namespace, and what a cluster-scoped resource needs).
	Namespace string
	// Name selects one object: key Namespace/Name, or Name when Namespace is "".
	Name string
	// LabelSelector is a label selector in kubectl syntax (labels.Parse).
	LabelSelector string
	// FieldSelector supports metadata.name and metadata.namespace for every
	// resource, and a few more fields for Pods (see FieldLabels).
	FieldSelector string
	// Index is "NAME=VALUE": only objects that the stored index NAME lists
	// under VALUE (read from the index bucket, no IndexFunc needed).
	Index string
	// MetadataOnly returns apiVersion, kind and metadata only (what a
	// table needs), which skips encoding the rest of each object.
	MetadataOnly bool
	// KeysOnly returns apiVersion, kind, name and namespace only, read from
	// the object keys without decoding a payload (what -o name needs; it
	// works on sealed payloads without their key). It applies only when
	// the query has no label or field selector and no index, and the
	// store's identity names its kind; otherwise objects are decoded as
	// usual.
	KeysOnly bool
	// ShowSecrets leaves the data, stringData and last-applied annotation
	// of Secrets in place; by default they are redacted.
	ShowSecrets bool
}

// Query string parameter names.
const (
	paramNamespace     = "namespace"
	paramName          = "name"
	paramLabelSelector = "labelSelector"
	paramFieldSelector = "fieldSelector"
	paramIndex         = "index"
	paramMetadataOnly  = "metadataOnly"
	paramShowSecrets   = "showSecrets"
	paramKeysOnly      = "keysOnly"
)

// Values encodes q (without Store, which is part of the path).
func (q Query) Values() url.Values {
	v := url.Values{}
	set := func(k, s string) {
		if s != "" {
			v.Set(k, s)
		}
	}
	set(paramNamespace, q.Namespace)
	set(paramName, q.Name)
	set(paramLabelSelector, q.LabelSelector)
	set(paramFieldSelector, q.FieldSelector)
	set(paramIndex, q.Index)
	if q.MetadataOnly {
		v.Set(paramMetadataOnly, "true")
	}
	if q.ShowSecrets {
		v.Set(paramShowSecrets, "true")
	}
	if q.KeysOnly {
		v.Set(paramKeysOnly, "true")
	}
	return v
}

// ParseQuery decodes the query string of an objects request for store.
func ParseQuery(store string, v url.Values) (Query, error) {
	q := Query{
		Store:         store,
		Namespace:     v.Get(paramNamespace),
		Name:          v.Get(paramName),
		LabelSelector: v.Get(paramLabelSelector),
		FieldSelector: v.Get(paramFieldSelector),
		Index:         v.Get(paramIndex),
	}
	var err error
	if q.MetadataOnly, err = parseBool(v, paramMetadataOnly); err != nil {
		return q, err
	}
	if q.ShowSecrets, err = parseBool(v, paramShowSecrets); err != nil {
		return q, err
	}
	if q.KeysOnly, err = parseBool(v, paramKeysOnly); err != nil {
		return q, err
	}
	return q, nil
}

func parseBool(v url.Values, k string) (bool, error) {
	s := v.Get(k)
	if s == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, fmt.Errorf("%w: %s=%q is not a boolean", ErrBadQuery, k, s)
	}
	return b, nil
}

// FieldLabels returns the field selector labels supported for objects of
// kind (group "" is the core group), sorted. Like the apiserver, every
// resource supports metadata.name and metadata.namespace; Pods add the
// fields kubectl users select on most.
func FieldLabels(group, kind string) []string {
	out := []string{"metadata.name", "metadata.namespace"}
	if group == "" && kind == "Pod" {
		out = append(out, "spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
			"spec.serviceAccountName", "status.phase", "status.podIP", "status.nominatedNodeName")
	}
	sort.Strings(out)
	return out
}

// compiledQuery is a Query with its selectors parsed and checked.
type compiledQuery struct {
	Query
	labels     labels.Selector
	fields     fields.Selector
	indexName  string
	indexValue string
	isPod      bool
}

// compile parses q's selectors for a store whose identity is id (which
// may be nil). Errors wrap ErrBadQuery and read like the apiserver's.
func (q Query) compile(id *cachefile.Identity) (*compiledQuery, error) {
	c := &compiledQuery{Query: q, labels: labels.Everything(), fields: fields.Everything()}
	var group, kind string
	if id != nil {
		group, kind = id.Group, id.Kind
	}
	c.isPod = group == "" && kind == "Pod"
	if q.LabelSelector != "" {
		sel, err := labels.Parse(q.LabelSelector)
		if err != nil {
			return nil, fmt.Errorf("%w: label selector %q: %v", ErrBadQuery, q.LabelSelector, err)
		}
		c.labels = sel
	}
	if q.FieldSelector != "" {
		sel, err := fields.ParseSelector(q.FieldSelector)
		if err != nil {
			return nil, fmt.Errorf("%w: field selector %q: %v", ErrBadQuery, q.FieldSelector, err)
		}
		supported := FieldLabels(group, kind)
		for _, r := range sel.Requirements() {
			if i := sort.SearchStrings(supported, r.Field); i == len(supported) || supported[i] != r.Field {
				return nil, fmt.Errorf("%w: field label not supported: %s (supported: %s)", ErrBadQuery, r.Field, strings.Join(supported, ", "))
			}
		}
		c.fields = sel
	}
	if q.Index != "" {
		name, value, ok := strings.Cut(q.Index, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("%w: index %q: want NAME=VALUE", ErrBadQuery, q.Index)
		}
		c.indexName, c.indexValue = name, value
	}
	return c, nil
}

// key is the store key of the object q.Name names.
func (c *compiledQuery) key() string {
	if c.Namespace == "" {
		return c.Name
	}
	return c.Namespace + "/" + c.Name
}

// matches reports whether obj passes the namespace, name, label and field
// filters.
func (c *compiledQuery) matches(obj runtime.Object) (bool, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return false, fmt.Errorf("object %T: %w", obj, err)
	}
	if c.Namespace != "" && m.GetNamespace() != c.Namespace {
		return false, nil
	}
	if c.Name != "" && m.GetName() != c.Name {
		return false, nil
	}
	if !c.labels.Empty() && !c.labels.Matches(labels.Set(m.GetLabels())) {
		return false, nil
	}
	if c.fields.Empty() {
		return true, nil
	}
	set := fields.Set{"metadata.name": m.GetName(), "metadata.namespace": m.GetNamespace()}
	if c.isPod {
		addPodFields(set, obj)
	}
	return c.fields.Matches(set), nil
}

// addPodFields adds the Pod field labels of FieldLabels to set, from a
// typed Pod or an unstructured one.
func addPodFields(set fields.Set, obj runtime.Object) {
	switch p := obj.(type) {
	case *v1.Pod:
		set["spec.nodeName"] = p.Spec.NodeName
		set["spec.restartPolicy"] = string(p.Spec.RestartPolicy)
		set["spec.schedulerName"] = p.Spec.SchedulerName
		set["spec.serviceAccountName"] = p.Spec.ServiceAccountName
		set["status.phase"] = string(p.Status.Phase)
		set["status.podIP"] = p.Status.PodIP
		set["status.nominatedNodeName"] = p.Status.NominatedNodeName
	case *unstructured.Unstructured:
		for _, f := range []string{"spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
			"spec.serviceAccountName", "status.phase", "status.podIP", "status.nominatedNodeName"} {
			s, _, _ := unstructured.NestedString(p.Object, strings.Split(f, ".")...)
			set[f] = s
		}
	}
}
