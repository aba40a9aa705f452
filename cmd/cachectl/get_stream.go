package main

// How cachectl get prints a large result without holding it: kubectl's
// table in two passes, and -o json, yaml and name one object at a time,
// byte for byte what printing the whole list at once writes.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"runtime"

	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/boltinformer/boltinformer/internal/admin"
)

// streamChunk is how many objects a streamed table holds at a time
// (kubectl's table printer flushes every 100 rows too), and printChunk how
// many a streamed -o json, yaml or name prints at once, on every core.
// Variables so that tests cross chunk boundaries with a few objects.
var (
	streamChunk = 100
	printChunk  = 32
)

// streamGets turns streaming on; tests turn it off to print the same
// result through the whole-list path, which the streamed bytes must equal.
var streamGets = true

// resolvedRequest is a request whose resource was found in the file.
type resolvedRequest struct {
	res       resource
	names     []string
	namespace string
}

// streams reports whether get prints its result while reading it. It
// does when every request lists a whole resource (named objects are few,
// and one decides between printing an object and a list), nothing sorts
// (a sort needs every object) and the output is a table, json, yaml or
// name. Templates, jsonpath and custom columns see the whole list, as in
// kubectl.
func (o *getOptions) streams() bool {
	if !streamGets || o.sorter != nil {
		return false
	}
	for _, r := range o.requests {
		if len(r.names) > 0 {
			return false
		}
	}
	switch o.output {
	case "", "wide", "json", "yaml", "name":
		return true
	}
	return false
}

// streamTables prints each resource's kubectl table. kubectl's printer
// pads the header to the widest cell of the whole table before its first
// row; a first pass finds those widths (the printer's own tabwriter,
// writing nowhere, remembers them), the second prints with them. Each
// pass holds streamChunk objects. Both passes read the same objects from
// a file; through a socket, an object that grows between them widens its
// column from its row on.
func (o *getOptions) streamTables(ctx context.Context, e *env, r admin.Reader, reqs []resolvedRequest) error {
	out := bufio.NewWriterSize(e.streams.Out, 64<<10)
	printed := false
	for _, req := range reqs {
		q := o.query(req.res, req.namespace)
		topts := tableOptions{gk: req.res.gvk.GroupKind(), now: e.now()}
		allNamespaces, withKind := req.namespace == "", len(reqs) > 1
		widths := printers.GetNewTabWriter(io.Discard)
		n, err := eachTable(ctx, r, q, topts, func(t *metav1.Table) error {
			// A printer per chunk: each pads its header to its chunk's widest cells.
			if err := o.tablePrinter(req.res, allNamespaces, withKind).PrintObj(t, widths); err != nil {
				return err
			}
			return widths.Flush()
		})
		if err != nil {
			return err
		}
		if n == 0 {
			continue
		}
		if printed {
			fmt.Fprintln(out)
		}
		printed = true
		tw := printers.GetNewTabWriter(out)
		tw.SetRememberedWidths(widths.RememberedWidths())
		p := o.tablePrinter(req.res, allNamespaces, withKind)
		if _, err := eachTable(ctx, r, q, topts, func(t *metav1.Table) error {
			if err := p.PrintObj(t, tw); err != nil {
				return err
			}
			return tw.Flush()
		}); err != nil {
			return err
		}
	}
	if err := out.Flush(); err != nil {
		return err
	}
	if !printed && !o.ignoreNotFound {
		results := make([]fetched, len(reqs))
		for i, req := range reqs {
			results[i] = fetched{res: req.res, namespace: req.namespace}
		}
		o.printNothingFound(e.streams.ErrOut, results)
	}
	return nil
}

// eachTable reads what q selects and hands fn its table streamChunk
// objects at a time. It returns how many objects it read. From a file it
// reads the store's decoded objects (objectLister), which fill a row
// without List's JSON round trip.
func eachTable(ctx context.Context, r admin.Reader, q admin.Query, topts tableOptions, fn func(*metav1.Table) error) (int, error) {
	if ol, ok := r.(objectLister); ok {
		return eachTableOf(topts, fn, func(add func(k8sruntime.Object) error) error { return ol.ListObjects(ctx, q, add) })
	}
	return eachTableOf(topts, fn, func(add func(*unstructured.Unstructured) error) error { return r.List(ctx, q, add) })
}

// objectLister is a Reader that also lists the objects as its stores
// decoded them (admin.Local; the socket's client carries JSON only).
type objectLister interface {
	ListObjects(ctx context.Context, q admin.Query, fn func(k8sruntime.Object) error) error
}

// eachTableOf is eachTable over the objects list hands to add.
func eachTableOf[T k8sruntime.Object](topts tableOptions, fn func(*metav1.Table) error, list func(add func(T) error) error) (int, error) {
	n := 0
	chunk := make([]T, 0, streamChunk)
	emit := func() error {
		t, err := buildTable(chunk, topts)
		if err != nil {
			return err
		}
		clear(chunk)
		chunk = chunk[:0]
		return fn(t)
	}
	err := list(func(obj T) error {
		n++
		chunk = append(chunk, obj)
		if len(chunk) < streamChunk {
			return nil
		}
		return emit()
	})
	if err != nil {
		return n, queryError(err)
	}
	if len(chunk) > 0 {
		return n, emit()
	}
	return n, nil
}

// listFraming is how kubectl's printer writes a List of objects (listOf)
// in one -o format: header, the items one after another with sep between
// them, trailer. A list of no items is printed whole by the printer.
type listFraming struct {
	header, sep, trailer string
	newPrinter           func() printers.ResourcePrinter
}

// listFramingFor returns the framing of -o output, or false when the
// format is not streamed.
func listFramingFor(output string, showManagedFields bool) (listFraming, bool) {
	wrap := func(p printers.ResourcePrinter) printers.ResourcePrinter {
		return withManagedFields(p, showManagedFields)
	}
	switch output {
	case "json":
		return listFraming{
			header:  "{\n    \"apiVersion\": \"v1\",\n    \"items\": [\n",
			sep:     ",\n",
			trailer: "\n    ],\n    \"kind\": \"List\",\n    \"metadata\": {\n        \"resourceVersion\": \"\"\n    }\n}\n",
			newPrinter: func() printers.ResourcePrinter {
				return listPrinter{showManagedFields: showManagedFields, slow: wrap(&printers.JSONPrinter{})}
			},
		}, true
	case "yaml":
		return listFraming{
			header:  "apiVersion: v1\nitems:\n",
			trailer: "kind: List\nmetadata:\n  resourceVersion: \"\"\n",
			newPrinter: func() printers.ResourcePrinter {
				return listPrinter{yaml: true, showManagedFields: showManagedFields, slow: wrap(&printers.YAMLPrinter{})}
			},
		}, true
	case "name":
		return listFraming{newPrinter: func() printers.ResourcePrinter { return wrap(&printers.NamePrinter{}) }}, true
	}
	return listFraming{}, false
}

// item prints a List of u alone with a new printer into buf and leaves
// in buf only u's part of it: an item of a List is printed the same
// whatever its neighbours (JSON indents it by its depth, YAML by its
// sequence), so these parts joined with the framing are the bytes of the
// whole List.
func (f listFraming) item(u *unstructured.Unstructured, buf *bytes.Buffer) error {
	buf.Reset()
	if err := f.newPrinter().PrintObj(listOf([]*unstructured.Unstructured{u}), buf); err != nil {
		return err
	}
	b := buf.Bytes()
	if !bytes.HasPrefix(b, []byte(f.header)) || !bytes.HasSuffix(b, []byte(f.trailer)) || len(b) < len(f.header)+len(f.trailer) {
		return fmt.Errorf("%w: printing %s/%s: the printer's List does not begin and end as this cachectl expects", errUnexpectedPrint, u.GetNamespace(), u.GetName())
	}
	buf.Truncate(len(b) - len(f.trailer))
	buf.Next(len(f.header))
	return nil
}

// items prints each of us into the buffer of the same index, on every core.
func (f listFraming) items(us []*unstructured.Unstructured, bufs []bytes.Buffer) error {
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, u := range us {
		g.Go(func() error { return f.item(u, &bufs[i]) })
	}
	return g.Wait()
}

// streamObjects prints the objects of every request as one List in -o
// json, yaml or name. It reads printChunk objects, prints them on every
// core (an object's JSON or YAML costs several times its read), writes
// them in order, and reads the next ones.
func (o *getOptions) streamObjects(ctx context.Context, e *env, r admin.Reader, reqs []resolvedRequest) error {
	f, ok := listFramingFor(o.output, o.showManagedFields)
	if !ok {
		return fmt.Errorf("%w: -o %s is not streamed", errUnexpectedPrint, o.output)
	}
	out := bufio.NewWriterSize(e.streams.Out, 64<<10)
	chunk := make([]*unstructured.Unstructured, 0, printChunk)
	printed := make([]bytes.Buffer, printChunk)
	n := 0
	flush := func() error {
		if err := f.items(chunk, printed); err != nil {
			return err
		}
		for i := range chunk {
			if n == 0 {
				out.WriteString(f.header)
			} else {
				out.WriteString(f.sep)
			}
			n++
			if _, err := out.Write(printed[i].Bytes()); err != nil {
				return err
			}
		}
		clear(chunk)
		chunk = chunk[:0]
		return nil
	}
	for _, req := range reqs {
		err := r.List(ctx, o.query(req.res, req.namespace), func(u *unstructured.Unstructured) error {
			if chunk = append(chunk, u); len(chunk) < printChunk {
				return nil
			}
			return flush()
		})
		if err != nil {
			return queryError(err)
		}
	}
	if err := flush(); err != nil {
		return err
	}
	if n == 0 {
		if err := o.printer.PrintObj(listOf(nil), out); err != nil {
			return err
		}
	} else {
		out.WriteString(f.trailer)
	}
	return out.Flush()
}
