package factory

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer/reflector"
)

// typedClient is the generated typed client of one resource, found by its
// object type: client.CoreV1().Pods(namespace) for *v1.Pod. Generated
// informers list and watch through it; so do ours, with the same calls.
type typedClient struct {
	// group is the index of the clientset method returning the group
	// version client (CoreV1), resource the name of that client's method
	// returning the resource client (Pods).
	group      int
	resource   string
	namespaced bool
}

var (
	contextType     = reflect.TypeFor[context.Context]()
	listOptionsType = reflect.TypeFor[metav1.ListOptions]()
	watchType       = reflect.TypeFor[watch.Interface]()
	errorType       = reflect.TypeFor[error]()
	objectType      = reflect.TypeFor[runtime.Object]()
	// protobufType is what the types with generated protobuf methods
	// (those of k8s.io/api) have, and custom resources' types lack.
	protobufType = reflect.TypeFor[interface {
		Marshal() ([]byte, error)
		Unmarshal([]byte) error
	}]()
)

// findTypedClient finds the typed client of objects of type t in client's
// method set: a group version method (no arguments) returning an interface
// with a resource method (a namespace argument or none) whose client's Get
// returns t and which can List and Watch. It looks at types only, calling
// nothing.
func findTypedClient(client any, t reflect.Type) (typedClient, error) {
	ct := reflect.TypeOf(client)
	if ct == nil {
		return typedClient{}, fmt.Errorf("%w: %v: the clientset is nil", ErrNoClient, t)
	}
	for i := 0; i < ct.NumMethod(); i++ {
		gm := ct.Method(i).Type // with the receiver as In(0)
		if gm.NumIn() != 1 || gm.NumOut() != 1 || gm.Out(0).Kind() != reflect.Interface {
			continue
		}
		gt := gm.Out(0)
		for j := 0; j < gt.NumMethod(); j++ {
			rm := gt.Method(j)
			namespaced := rm.Type.NumIn() == 1 && rm.Type.In(0).Kind() == reflect.String
			if !namespaced && rm.Type.NumIn() != 0 || rm.Type.NumOut() != 1 || rm.Type.Out(0).Kind() != reflect.Interface {
				continue
			}
			if servesType(rm.Type.Out(0), t) {
				return typedClient{group: i, resource: rm.Name, namespaced: namespaced}, nil
			}
		}
	}
	return typedClient{}, fmt.Errorf("%w: %v", ErrNoClient, t)
}

// resourceName is the resource the client lists and watches ("pods"):
// its method's name in lower case, as client-gen names both from the
// resource's plural.
func (tc typedClient) resourceName() string { return strings.ToLower(tc.resource) }

// servesType reports whether rt (a resource client interface) gets objects
// of type t and has List(ctx, ListOptions) and Watch(ctx, ListOptions).
func servesType(rt, t reflect.Type) bool {
	get, ok := rt.MethodByName("Get")
	if !ok || get.Type.NumOut() != 2 || get.Type.Out(0) != t {
		return false
	}
	list, ok := rt.MethodByName("List")
	if !ok || !callsWithListOptions(list.Type) || !list.Type.Out(0).Implements(objectType) {
		return false
	}
	w, ok := rt.MethodByName("Watch")
	return ok && callsWithListOptions(w.Type) && w.Type.Out(0) == watchType
}

func callsWithListOptions(m reflect.Type) bool {
	return m.NumIn() == 2 && m.In(0) == contextType && m.In(1) == listOptionsType &&
		m.NumOut() == 2 && m.Out(1) == errorType
}

// listWatchOptions is how a typed client's ListWatch decodes.
type listWatchOptions struct {
	// copyStrings is the informer's CopyStrings, for the WATCH events'
	// objects too.
	copyStrings bool
	// preferProtobuf asks for protobuf, as client-go's generated clients
	// do for the types of k8s.io/api; set only for a type with protobuf
	// methods, never for a custom resource's, which the apiserver serves
	// as JSON.
	preferProtobuf bool
}

// listWatch returns a ListerWatcher making the requests of the generated
// informer: tweak, then client.Group().Resource(namespace).List or Watch.
// Through a real REST client it is a reflector.ListWatch, which makes
// those requests itself (to resourceName) and decodes each WATCH response on
// every core with s, the scheme of the clientset's types; a client without
// one (a fake clientset) is called as is.
func (tc typedClient) listWatch(client any, s *runtime.Scheme, namespace string, tweak func(*metav1.ListOptions), opts listWatchOptions) cache.ListerWatcher {
	if rc := tc.restClient(client); rc != nil {
		return reflector.NewListWatch(rc, tc.resourceName(), s, reflector.ListWatchOptions{
			Namespace:        namespace,
			PreferProtobuf:   opts.preferProtobuf,
			TweakListOptions: tweak,
			CopyStrings:      opts.copyStrings,
		})
	}
	return tc.clientListWatch(client, namespace, tweak)
}

// restClient returns the REST client of tc's group client, or nil when it
// has none (fake clientsets return a nil one).
func (tc typedClient) restClient(client any) *rest.RESTClient {
	m := reflect.ValueOf(client).Method(tc.group).Call(nil)[0].MethodByName("RESTClient")
	if !m.IsValid() || m.Type().NumIn() != 0 || m.Type().NumOut() != 1 {
		return nil
	}
	rc, _ := m.Call(nil)[0].Interface().(*rest.RESTClient)
	return rc
}

// clientListWatch returns a ListerWatcher calling the typed client:
// client.Group().Resource(namespace).List or Watch, after tweak.
func (tc typedClient) clientListWatch(client any, namespace string, tweak func(*metav1.ListOptions)) cache.ListerWatcher {
	var args []reflect.Value
	if tc.namespaced {
		args = []reflect.Value{reflect.ValueOf(namespace)}
	}
	rc := reflect.ValueOf(client).Method(tc.group).Call(nil)[0].MethodByName(tc.resource).Call(args)[0]
	list, watchFn := rc.MethodByName("List"), rc.MethodByName("Watch")
	call := func(m reflect.Value, ctx context.Context, opts metav1.ListOptions) (reflect.Value, error) {
		if tweak != nil {
			tweak(&opts)
		}
		out := m.Call([]reflect.Value{reflect.ValueOf(ctx), reflect.ValueOf(opts)})
		if err, _ := out[1].Interface().(error); err != nil {
			return reflect.Value{}, err
		}
		return out[0], nil
	}
	listCtx := func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		v, err := call(list, ctx, opts)
		if err != nil {
			return nil, err
		}
		return v.Interface().(runtime.Object), nil
	}
	watchCtx := func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		v, err := call(watchFn, ctx, opts)
		if err != nil {
			return nil, err
		}
		return v.Interface().(watch.Interface), nil
	}
	return cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListFunc:             func(opts metav1.ListOptions) (runtime.Object, error) { return listCtx(context.Background(), opts) },
		WatchFunc:            func(opts metav1.ListOptions) (watch.Interface, error) { return watchCtx(context.Background(), opts) },
		ListWithContextFunc:  listCtx,
		WatchFuncWithContext: watchCtx,
	}, client)
}
