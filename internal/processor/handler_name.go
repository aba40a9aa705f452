package processor

import (
	"fmt"
	"reflect"
	"runtime"

	"k8s.io/client-go/tools/cache"
)

// handlerName names a handler for logs and sync checker names: the function
// behind a ResourceEventHandlerFuncs-style handler, otherwise its type.
func handlerName(h cache.ResourceEventHandler) string {
	var fns []any
	switch h := h.(type) {
	case cache.ResourceEventHandlerFuncs:
		fns = []any{h.AddFunc, h.UpdateFunc, h.DeleteFunc}
	case *cache.ResourceEventHandlerFuncs:
		if h != nil {
			fns = []any{h.AddFunc, h.UpdateFunc, h.DeleteFunc}
		}
	case cache.ResourceEventHandlerDetailedFuncs:
		fns = []any{h.AddFunc, h.UpdateFunc, h.DeleteFunc}
	case *cache.ResourceEventHandlerDetailedFuncs:
		if h != nil {
			fns = []any{h.AddFunc, h.UpdateFunc, h.DeleteFunc}
		}
	}
	for _, fn := range fns {
		v := reflect.ValueOf(fn)
		if v.Kind() != reflect.Func || v.IsNil() {
			continue
		}
		if f := runtime.FuncForPC(v.Pointer()); f != nil {
			return f.Name()
		}
	}
	return fmt.Sprintf("%T", h)
}
