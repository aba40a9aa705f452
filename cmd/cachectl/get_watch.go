package main

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/boltinformer/boltinformer/internal/admin"
)

// runWatch prints the objects of res, then every change as the process
// that owns the file stores it, the way kubectl get -w prints an
// apiserver's watch: a table's header once and one row per change (the
// row of a deleted object as last seen); with -o json, yaml, name or a
// template one object per change; with --output-watch-events, the event
// type too (an EVENT column, or {"type","object"}). It ends when ctx does
// (Ctrl-C), without error.
func (o *getOptions) runWatch(ctx context.Context, e *env, r admin.Reader, res resource) error {
	ns := o.namespaceFor(res)
	q := o.query(res, ns)
	q.Index = ""
	if names := o.requests[0].names; len(names) == 1 {
		q.Name = names[0]
	}
	w := printers.GetNewTabWriter(e.streams.Out)
	table := o.tablePrinter(res, ns == "", false)
	// last keeps every printed object, to print a deletion's row in full.
	last := map[string]*unstructured.Unstructured{}
	synced := false
	var initial []*unstructured.Unstructured
	printOne := func(typ string, u *unstructured.Unstructured) error {
		if !o.showManagedFields {
			u.SetManagedFields(nil)
		}
		if o.printer == nil {
			t, err := buildTable([]*unstructured.Unstructured{u}, tableOptions{gk: res.gvk.GroupKind(), now: e.now()})
			if err != nil {
				return err
			}
			var obj runtime.Object = t
			if o.outputWatchEvents {
				obj = &metav1.WatchEvent{Type: typ, Object: runtime.RawExtension{Object: t}}
			}
			return table.PrintObj(obj, w)
		}
		var obj runtime.Object = u
		if o.outputWatchEvents {
			obj = &metav1.WatchEvent{Type: typ, Object: runtime.RawExtension{Object: u}}
		}
		return o.printer.PrintObj(obj, w)
	}
	err := r.Watch(ctx, q, func(ev admin.Event) error {
		switch {
		case ev.Type == admin.EventSynced:
			synced = true
			if !o.watchOnly {
				if len(initial) > 0 && o.printer == nil && !o.outputWatchEvents {
					// The list, as get prints it: one table.
					t, err := buildTable(initial, tableOptions{gk: res.gvk.GroupKind(), now: e.now()})
					if err != nil {
						return err
					}
					if err := table.PrintObj(t, w); err != nil {
						return err
					}
				} else {
					for _, u := range initial {
						if err := printOne(string(watch.Added), u); err != nil {
							return err
						}
					}
				}
				if len(initial) == 0 && !o.ignoreNotFound {
					o.printNothingFound(e.streams.ErrOut, []fetched{{namespace: ns}})
				}
			}
			initial = nil
			return w.Flush()
		case ev.Object == nil:
			return fmt.Errorf("watch of %s: %s event without an object", res, ev.Type)
		}
		key := ev.Object.GetNamespace() + "/" + ev.Object.GetName()
		obj := ev.Object
		if ev.Type == string(watch.Deleted) {
			// A deleted object comes as its key alone: print it as last seen.
			// (An object that left the selector comes whole.)
			if prev, ok := last[key]; ok && obj.GetResourceVersion() == "" {
				obj = prev
			}
			delete(last, key)
		} else {
			last[key] = obj
		}
		if !synced {
			initial = append(initial, obj)
			return nil
		}
		if err := printOne(ev.Type, obj); err != nil {
			return err
		}
		return w.Flush()
	})
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return nil // interrupted: kubectl get -w ends quietly
	}
	if err != nil {
		return queryError(err)
	}
	return nil
}
