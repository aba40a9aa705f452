package main

import (
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/util/jsonpath"
)

// outputFormats are the -o values get accepts, as kubectl spells them.
var outputFormats = []string{"json", "yaml", "name", "wide", "jsonpath=", "jsonpath-file=", "jsonpath-as-json=", "go-template=", "go-template-file=", "template=", "custom-columns=", "custom-columns-file="}

// objectPrinter returns the cli-runtime printer for a non-table -o value,
// or nil for the table formats ("" and "wide").
func objectPrinter(cmd *cobra.Command, output string, allowMissingKeys, showManagedFields, noHeaders bool) (printers.ResourcePrinter, error) {
	format, arg, _ := strings.Cut(output, "=")
	var p printers.ResourcePrinter
	switch format {
	case "", "wide":
		if arg != "" {
			return nil, usageErrorf(cmd, "output format %q takes no argument", format)
		}
		return nil, nil
	case "json":
		p = &printers.JSONPrinter{}
	case "yaml":
		p = &printers.YAMLPrinter{}
	case "name":
		p = &printers.NamePrinter{}
	case "custom-columns", "custom-columns-file":
		var cc *customColumnsPrinter
		var err error
		if format == "custom-columns" {
			cc, err = customColumnsFromSpec(arg, noHeaders)
		} else {
			f, ferr := os.Open(arg)
			if ferr != nil {
				return nil, usageErrorf(cmd, "-o %s: %v", format, ferr)
			}
			cc, err = customColumnsFromFile(f, noHeaders)
			f.Close()
		}
		if err != nil {
			return nil, usageErrorf(cmd, "-o %s: %v", format, err)
		}
		return cc, nil
	case "jsonpath", "jsonpath-file", "jsonpath-as-json", "go-template", "go-template-file", "template":
		tmpl := arg
		if strings.HasSuffix(format, "-file") {
			b, err := os.ReadFile(arg)
			if err != nil {
				return nil, usageErrorf(cmd, "-o %s: %v", format, err)
			}
			tmpl = string(b)
		}
		if tmpl == "" {
			return nil, usageErrorf(cmd, "-o %s needs a template: -o %s=TEMPLATE", format, format)
		}
		if strings.HasPrefix(format, "jsonpath") {
			jp, err := printers.NewJSONPathPrinter(tmpl)
			if err != nil {
				return nil, usageErrorf(cmd, "-o %s: %v", format, err)
			}
			jp.AllowMissingKeys(allowMissingKeys)
			if format == "jsonpath-as-json" {
				jp.EnableJSONOutput(true)
			}
			p = jp
		} else {
			gt, err := printers.NewGoTemplatePrinter([]byte(tmpl))
			if err != nil {
				return nil, usageErrorf(cmd, "-o %s: %v", format, err)
			}
			gt.AllowMissingKeys(allowMissingKeys)
			p = gt
		}
	default:
		return nil, usageErrorf(cmd, "unknown output format %q; one of: %s", output, strings.Join(outputFormats, ", "))
	}
	return withManagedFields(p, showManagedFields), nil
}

// withManagedFields returns p, made to leave out managedFields as kubectl
// does unless show (--show-managed-fields).
func withManagedFields(p printers.ResourcePrinter, show bool) printers.ResourcePrinter {
	if show {
		return p
	}
	return &printers.OmitManagedFieldsPrinter{Delegate: p}
}

// tableOptions shape the table get prints.
type tableOptions struct {
	gk  schema.GroupKind
	now time.Time
}

// buildTable makes the metav1.Table of items with kubectl's columns for
// the kind (columns.go); for other kinds NAME and AGE, as kubectl prints
// types without printer columns, and with -o wide RESOURCEVERSION, UID
// and OWNER. The table printer adds NAMESPACE, the kind and labels. Items
// are JSON-form objects or, read from a file, the store's decoded ones.
func buildTable[T runtime.Object](items []T, o tableOptions) (*metav1.Table, error) {
	kc, ok := columnsFor(o.gk)
	if !ok {
		kc = genericColumns
	}
	t := &metav1.Table{ColumnDefinitions: kc.columns, Rows: make([]metav1.TableRow, 0, len(items))}
	for _, obj := range items {
		cells, err := kc.cells.row(obj, o.now)
		if err != nil {
			return nil, err
		}
		t.Rows = append(t.Rows, metav1.TableRow{Cells: cells, Object: runtime.RawExtension{Object: obj}})
	}
	return t, nil
}

// genericColumns are the columns of a kind kubectl has no printer for.
var genericColumns = kindColumns{
	columns: []metav1.TableColumnDefinition{nameCol, col("Age", "string"),
		wideCol("ResourceVersion", "string"), wideCol("UID", "string"), wideCol("Owner", "string")},
	cells: cellRule{
		unstructured: func(u *unstructured.Unstructured, now time.Time) ([]interface{}, error) {
			return genericCells(u, now), nil
		},
		typed: func(obj runtime.Object, now time.Time) ([]interface{}, bool) {
			m, err := meta.Accessor(obj)
			if err != nil {
				return nil, false
			}
			return genericCells(m, now), true
		},
	},
}

// genericCells are the cells of genericColumns.
func genericCells(m metav1.Object, now time.Time) []interface{} {
	return []interface{}{m.GetName(), age(m.GetCreationTimestamp(), now), m.GetResourceVersion(), string(m.GetUID()), owner(m)}
}

// age is kubectl's AGE: a short human duration since ts.
func age(ts metav1.Time, now time.Time) string {
	if ts.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(ts.Time))
}

// owner names the controller (or first owner) of an object as Kind/name.
func owner(m metav1.Object) string {
	refs := m.GetOwnerReferences()
	if len(refs) == 0 {
		return "<none>"
	}
	ref := refs[0]
	for _, r := range refs {
		if r.Controller != nil && *r.Controller {
			ref = r
			break
		}
	}
	return ref.Kind + "/" + ref.Name
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// listOf wraps items in the v1 List kubectl get -o json|yaml prints.
func listOf(items []*unstructured.Unstructured) *unstructured.UnstructuredList {
	list := &unstructured.UnstructuredList{Object: map[string]interface{}{
		"apiVersion": "v1",
		"kind":       "List",
		"metadata":   map[string]interface{}{"resourceVersion": ""},
	}}
	list.Items = make([]unstructured.Unstructured, len(items))
	for i, u := range items {
		list.Items[i] = *u
	}
	return list
}

// sortField parses a --sort-by expression the way kubectl accepts it:
// "{.metadata.name}", ".metadata.name" or "metadata.name".
func sortField(expr string) (*jsonpath.JSONPath, error) {
	if !strings.HasPrefix(expr, "{") {
		if !strings.HasPrefix(expr, ".") {
			expr = "." + expr
		}
		expr = "{" + expr + "}"
	}
	jp := jsonpath.New("sort-by").AllowMissingKeys(true)
	if err := jp.Parse(expr); err != nil {
		return nil, err
	}
	return jp, nil
}

// sortItems orders items by the value jp finds in each (stable; missing
// values first; numbers numerically, RFC 3339 times chronologically,
// anything else as text).
func sortItems(items []*unstructured.Unstructured, jp *jsonpath.JSONPath) error {
	keys := make([]interface{}, len(items))
	for i, u := range items {
		res, err := jp.FindResults(u.Object)
		if err != nil {
			return fmt.Errorf("--sort-by: %w", err)
		}
		if len(res) > 0 && len(res[0]) > 0 {
			v := res[0][0]
			for v.Kind() == reflect.Interface && !v.IsNil() {
				v = v.Elem()
			}
			if v.IsValid() && v.CanInterface() {
				keys[i] = v.Interface()
			}
		}
	}
	idx := make([]int, len(items))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return less(keys[idx[a]], keys[idx[b]]) })
	sorted := make([]*unstructured.Unstructured, len(items))
	for i, j := range idx {
		sorted[i] = items[j]
	}
	copy(items, sorted)
	return nil
}

func less(a, b interface{}) bool {
	switch {
	case a == nil:
		return b != nil
	case b == nil:
		return false
	}
	if fa, ok := number(a); ok {
		if fb, ok := number(b); ok {
			return fa < fb
		}
	}
	sa, sb := fmt.Sprint(a), fmt.Sprint(b)
	if ta, err := time.Parse(time.RFC3339, sa); err == nil {
		if tb, err := time.Parse(time.RFC3339, sb); err == nil {
			return ta.Before(tb)
		}
	}
	return sa < sb
}

func number(v interface{}) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case float64:
		return n, true
	case int:
		return float64(n), true
	}
	return 0, false
}
