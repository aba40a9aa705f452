package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
)

// FakeResource is one list/watch endpoint of a FakeAPIServer: a type, how
// many objects of it, and their generator.
type FakeResource struct {
	// Group (empty for core), Version, Resource (plural) and Kind name it.
	Group, Version, Resource, Kind string
	// Namespaced types are served under /namespaces/{ns}/ as well.
	Namespaced bool
	// N objects: Gen(i, namespaces, rv, false) for i < N.
	N   int
	Gen ObjectGen
	// JSONOnly serves the objects as JSON whatever the client accepts, as
	// kube-apiserver serves custom resources; Gen then returns
	// *unstructured.Unstructured. Otherwise Gen returns a typed object of
	// client-go's scheme, kept as its bare protobuf message.
	JSONOnly bool
}

// GVR is the resource's group, version and resource.
func (r FakeResource) GVR() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: r.Group, Version: r.Version, Resource: r.Resource}
}

// APIVersion is group/version ("v1" for core).
func (r FakeResource) APIVersion() string {
	return schema.GroupVersion{Group: r.Group, Version: r.Version}.String()
}

// PodResource is the fake's Pods (Pod, updated by PodStatusUpdate): what
// every scenario but multi and million serves.
func PodResource(n int) FakeResource {
	return FakeResource{Version: "v1", Resource: "pods", Kind: "Pod", Namespaced: true, N: n,
		Gen: func(i, namespaces int, rv int64, update bool) runtime.Object {
			if update {
				return PodStatusUpdate(i, namespaces, rv)
			}
			return Pod(i, namespaces, rv)
		}}
}

// ConfigMapResource is n ConfigMaps of about 1 KB (scenario million).
func ConfigMapResource(n int) FakeResource {
	return FakeResource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true, N: n, Gen: ConfigMap}
}

// multiShares are the types of scenario multi and their shares of its
// objects, in thousandths (Namespaces get exactly the fake's namespaces).
var multiShares = []struct {
	res   FakeResource
	share int
}{
	{PodResource(0), 200},
	{FakeResource{Version: "v1", Resource: "services", Kind: "Service", Namespaced: true, Gen: Service}, 50},
	{FakeResource{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices", Kind: "EndpointSlice", Namespaced: true, Gen: EndpointSlice}, 100},
	{FakeResource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true, Gen: ConfigMap}, 150},
	{FakeResource{Version: "v1", Resource: "secrets", Kind: "Secret", Namespaced: true, Gen: Secret}, 100},
	{FakeResource{Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment", Namespaced: true, Gen: Deployment}, 50},
	{FakeResource{Group: "apps", Version: "v1", Resource: "replicasets", Kind: "ReplicaSet", Namespaced: true, Gen: ReplicaSet}, 100},
	{FakeResource{Version: "v1", Resource: "nodes", Kind: "Node", Gen: Node}, 10},
	{FakeResource{Version: "v1", Resource: "namespaces", Kind: "Namespace", Gen: Namespace}, 0},
	{FakeResource{Version: "v1", Resource: "serviceaccounts", Kind: "ServiceAccount", Namespaced: true, Gen: ServiceAccount}, 50},
	{FakeResource{Version: "v1", Resource: "events", Kind: "Event", Namespaced: true, Gen: Event}, 150},
	{FakeResource{Group: WidgetGroup, Version: "v1", Resource: "widgets", Kind: "Widget", Namespaced: true, Gen: Widget, JSONOnly: true}, 40},
}

// MultiResources are the 12 types of scenario multi with total objects
// among them: namespaces Namespaces, the rest shared out as in a busy
// cluster (Pods, ConfigMaps and Events most, Nodes fewest).
func MultiResources(total, namespaces int) []FakeResource {
	out := make([]FakeResource, len(multiShares))
	rest, left := total-namespaces, total
	for i, m := range multiShares {
		out[i] = m.res
		switch {
		case m.res.Resource == "namespaces":
			out[i].N = min(namespaces, left)
		case i == len(multiShares)-1:
			out[i].N = 0
		default:
			out[i].N = max(rest*m.share/1000, 1)
		}
		left -= out[i].N
	}
	// The last type takes what rounding left, so the total is exact.
	out[len(out)-1].N = max(left, 0)
	return out
}

// fakeRes is one resource the fake serves, with its objects.
type fakeRes struct {
	FakeResource
	gvk schema.GroupVersionKind
	// id is its index in FakeAPIServer.res; events carry it.
	id int32
	// objs, order and nsRange are guarded by FakeAPIServer.mu (objs'
	// entries are replaced by publishLocked; order and nsRange never
	// change after populate).
	objs    []fakeObj
	order   []int32 // object indexes in key order (namespace/name)
	nsRange map[string][2]int
}

type fakeObj struct {
	ns, name string
	rv       int64
	// raw is the bare protobuf message, or JSON for a JSONOnly type;
	// replaced, never mutated.
	raw []byte
}

// encode returns object i at rv in the form the fake keeps.
func (r *fakeRes) encode(i, namespaces int, rv int64, update bool) (fakeObj, error) {
	obj := r.Gen(i, namespaces, rv, update)
	m, err := meta.Accessor(obj)
	if err != nil {
		return fakeObj{}, err
	}
	o := fakeObj{ns: m.GetNamespace(), name: m.GetName(), rv: rv}
	if r.JSONOnly {
		o.raw, err = json.Marshal(obj)
		return o, err
	}
	pm, ok := obj.(interface{ Marshal() ([]byte, error) })
	if !ok {
		return o, fmt.Errorf("%s: %T has no protobuf encoding", r.Resource, obj)
	}
	o.raw, err = pm.Marshal()
	return o, err
}

// populate encodes the resource's objects in parallel and sorts them by key.
func (r *fakeRes) populate(namespaces int) error {
	n := r.N
	r.objs = make([]fakeObj, n)
	workers := 4
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				o, err := r.encode(i, namespaces, int64(i+1), false)
				if err != nil {
					errs[w] = err
					return
				}
				r.objs[i] = o
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	r.order = make([]int32, n)
	for i := range r.order {
		r.order[i] = int32(i)
	}
	sort.Slice(r.order, func(a, b int) bool {
		oa, ob := &r.objs[r.order[a]], &r.objs[r.order[b]]
		if oa.ns != ob.ns {
			return oa.ns < ob.ns
		}
		return oa.name < ob.name
	})
	r.nsRange = map[string][2]int{}
	for pos, idx := range r.order {
		ns := r.objs[idx].ns
		rg, ok := r.nsRange[ns]
		if !ok {
			rg = [2]int{pos, pos}
		}
		rg[1] = pos + 1
		r.nsRange[ns] = rg
	}
	return nil
}

// bounds returns the positions in key order that a namespace covers.
func (r *fakeRes) bounds(ns string) (int, int) {
	if ns == "" {
		return 0, len(r.order)
	}
	rg, ok := r.nsRange[ns]
	if !ok {
		return 0, 0
	}
	return rg[0], rg[1]
}

// newTyped returns an empty object of the resource's kind from client-go's scheme.
func (r *fakeRes) newTyped() (runtime.Object, error) {
	obj, err := scheme.Scheme.New(r.gvk)
	if err != nil {
		return nil, err
	}
	if _, ok := obj.(interface{ Unmarshal([]byte) error }); !ok {
		return nil, fmt.Errorf("%s: %T has no protobuf decoding", r.Resource, obj)
	}
	return obj, nil
}

// json returns an object the fake keeps as the JSON the apiserver sends,
// with its apiVersion and kind when withType is set (a watch event's object).
func (r *fakeRes) json(raw []byte, withType bool) ([]byte, error) {
	if r.JSONOnly {
		return raw, nil
	}
	obj, err := r.newTyped()
	if err != nil {
		return nil, err
	}
	if err := obj.(interface{ Unmarshal([]byte) error }).Unmarshal(raw); err != nil {
		return nil, err
	}
	if withType {
		obj.GetObjectKind().SetGroupVersionKind(r.gvk)
	}
	return json.Marshal(obj)
}

// bookmark returns the object of a BOOKMARK event of this kind, in the
// fake's form: only its resourceVersion (and the initial-events-end
// annotation that ends a WatchList) are set. A typed watch drops an event
// whose object is not of its type, so each kind needs its own.
func (r *fakeRes) bookmark(rv int64, initialEnd bool) ([]byte, error) {
	var obj runtime.Object
	if r.JSONOnly {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(r.gvk)
		obj = u
	} else {
		var err error
		if obj, err = r.newTyped(); err != nil {
			return nil, err
		}
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	m.SetResourceVersion(fmt.Sprint(rv))
	if initialEnd {
		m.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
	}
	if r.JSONOnly {
		return json.Marshal(obj)
	}
	return obj.(interface{ Marshal() ([]byte, error) }).Marshal()
}
