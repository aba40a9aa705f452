package main

// How cachectl get prints what it fetched: kubectl's tables, or the
// -o printer over a list, and kubectl's "No resources found".

import (
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/printers"
)

func (o *getOptions) print(e *env, results []fetched) error {
	out := e.streams.Out
	var all []*unstructured.Unstructured
	n := 0
	for _, f := range results {
		all = append(all, f.items...)
		n += f.len()
	}
	named := false
	for _, r := range o.requests {
		named = named || len(r.names) > 0
	}
	if named && n == 0 {
		return nil // only the not-found error (or nothing with --ignore-not-found), as kubectl
	}
	if o.printer != nil {
		single := len(o.requests) == 1 && len(o.requests[0].names) == 1 && len(all) == 1
		if single {
			return o.printer.PrintObj(all[0], out)
		}
		return o.printer.PrintObj(listOf(all), out)
	}
	printed := false
	for _, f := range results {
		if f.len() == 0 {
			continue
		}
		if printed {
			fmt.Fprintln(out)
		}
		printed = true
		topts := tableOptions{gk: f.res.gvk.GroupKind(), now: e.now()}
		var t *metav1.Table
		var err error
		if f.objects != nil {
			t, err = buildTable(f.objects, topts)
		} else {
			t, err = buildTable(f.items, topts)
		}
		if err != nil {
			return err
		}
		if err := o.tablePrinter(f.res, f.namespace == "", len(results) > 1).PrintObj(t, out); err != nil {
			return err
		}
	}
	if !printed && !o.ignoreNotFound {
		o.printNothingFound(e.streams.ErrOut, results)
	}
	return nil
}

// tablePrinter prints tables of res with get's options (allNamespaces:
// the rows come from every namespace).
func (o *getOptions) tablePrinter(res resource, allNamespaces, withKind bool) printers.ResourcePrinter {
	return printers.NewTablePrinter(printers.PrintOptions{
		NoHeaders:     o.noHeaders,
		WithNamespace: res.namespaced && allNamespaces,
		WithKind:      withKind || o.showKind,
		Kind:          res.gvk.GroupKind(),
		Wide:          o.output == "wide",
		ShowLabels:    o.showLabels,
		ColumnLabels:  o.labelColumns,
	})
}

// printNothingFound says so on stderr, as kubectl does.
func (o *getOptions) printNothingFound(w io.Writer, results []fetched) {
	ns := ""
	for _, f := range results {
		if f.namespace != "" {
			ns = f.namespace
		}
	}
	if ns != "" {
		fmt.Fprintf(w, "No resources found in %s namespace.\n", ns)
		return
	}
	fmt.Fprintln(w, "No resources found")
}
