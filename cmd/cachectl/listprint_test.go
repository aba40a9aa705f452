package main

import (
	"bytes"
	"encoding/json"
	"math/rand"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/kubernetes/scheme"
)

// kubectlPrinter is kubectl's -o json or yaml printer, which listPrinter
// must match byte for byte.
func kubectlPrinter(yaml, showManagedFields bool) printers.ResourcePrinter {
	var p printers.ResourcePrinter = &printers.JSONPrinter{}
	if yaml {
		p = &printers.YAMLPrinter{}
	}
	return withManagedFields(p, showManagedFields)
}

// checkListPrinter prints a List of items with listPrinter and with
// kubectl's printer, in both formats and with and without managed
// fields, and fails on any difference. It reports whether listPrinter
// took its fast way for YAML.
func checkListPrinter(t *testing.T, name string, items ...*unstructured.Unstructured) bool {
	t.Helper()
	fast := true
	for _, yaml := range []bool{false, true} {
		for _, show := range []bool{false, true} {
			p := listPrinter{yaml: yaml, showManagedFields: show, slow: kubectlPrinter(yaml, show)}
			var got, want bytes.Buffer
			gotErr := p.PrintObj(listOf(items), &got)
			wantErr := kubectlPrinter(yaml, show).PrintObj(listOf(items), &want)
			if (gotErr == nil) != (wantErr == nil) {
				t.Fatalf("%s (yaml %v, managed fields %v): error %v, kubectl's printer's %v", name, yaml, show, gotErr, wantErr)
			}
			if got.String() != want.String() {
				t.Fatalf("%s (yaml %v, managed fields %v) differs from kubectl's printer:\n--- got\n%s\n--- want\n%s", name, yaml, show, got.String(), want.String())
			}
			if yaml {
				_, ok := p.listMap(listOf(items))
				fast = fast && ok
			}
		}
	}
	return fast
}

// jsonForm is obj as List returns it: its JSON decoded as apimachinery
// decodes it (int64 or float64 numbers).
func jsonForm(t *testing.T, obj interface{}) *unstructured.Unstructured {
	t.Helper()
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	content := map[string]interface{}{}
	if err := utiljson.Unmarshal(raw, &content); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: content}
}

// TestListPrinterMatchesKubectl fuzzes an object of every built-in type
// and prints it, alone and with others, with listPrinter and kubectl's
// printers.
func TestListPrinterMatchesKubectl(t *testing.T) {
	f := fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(3), serializer.NewCodecFactory(scheme.Scheme)).
		NilChance(0.2).NumElements(0, 2).MaxDepth(8)
	var gvks []schema.GroupVersionKind
	for gvk := range scheme.Scheme.AllKnownTypes() {
		if gvk.Version != runtime.APIVersionInternal && !strings.HasSuffix(gvk.Kind, "List") {
			gvks = append(gvks, gvk)
		}
	}
	slices.SortFunc(gvks, func(a, b schema.GroupVersionKind) int { return strings.Compare(a.String(), b.String()) })
	fast, previous := 0, (*unstructured.Unstructured)(nil)
	for _, gvk := range gvks {
		obj, err := scheme.Scheme.New(gvk)
		if err != nil {
			t.Fatal(err)
		}
		f.Fill(obj)
		u := jsonForm(t, obj)
		u.SetGroupVersionKind(gvk)
		if checkListPrinter(t, gvk.String(), u) {
			fast++
		}
		if previous != nil {
			checkListPrinter(t, gvk.String()+" after another", previous, u)
		}
		previous = u
	}
	// The fast way is the common one: a built-in object holds no float.
	if fast < len(gvks)*9/10 {
		t.Fatalf("the fast way printed %d of %d types", fast, len(gvks))
	}
}

// TestListPrinterValues prints objects holding what a JSON-form object
// can hold, including what yaml.v2 would not read back from JSON as it is
// (those go kubectl's way), and checks listPrinter leaves them unchanged.
func TestListPrinterValues(t *testing.T) {
	managed := []interface{}{map[string]interface{}{"manager": "kubectl", "operation": "Update"}}
	for _, tc := range []struct {
		name string
		obj  map[string]interface{}
		fast bool
	}{
		{"scalars that YAML would read as others", map[string]interface{}{"s": []interface{}{"true", "no", "null", "~", "1e3", "0x1F", "012", "- a", "a: b", "#x", "", " lead", "multi\nline\n", "tab\there", "ünïcode ✓", "<&>", "\u2028"}}, true},
		{"integers", map[string]interface{}{"i": []interface{}{int64(0), int64(-1), int64(9223372036854775807), int64(-9223372036854775808)}}, true},
		{"nulls, booleans, empties", map[string]interface{}{"n": nil, "b": []interface{}{true, false}, "m": map[string]interface{}{}, "l": []interface{}{}}, true},
		{"keys that sort naturally", map[string]interface{}{"a10": int64(1), "a9": int64(2), "A": int64(3), "": int64(4), "1": int64(5), "true": int64(6)}, true},
		{"managed fields", map[string]interface{}{"metadata": map[string]interface{}{"name": "x", "managedFields": managed}}, true},
		{"metadata not a map", map[string]interface{}{"metadata": "x"}, true},
		{"floats", map[string]interface{}{"f": []interface{}{1.5, 1e6, 1e21, 1e-7, float64(-0.0), 3.0}}, false},
		{"invalid UTF-8 in a value", map[string]interface{}{"s": "a\xffb\xfe\xfd"}, false},
		{"invalid UTF-8 in a key", map[string]interface{}{"k\xff": "v", "k\xfe": "w"}, false},
		// encoding/json leaves these unescaped; yaml.v2 reads U+0085 as a
		// line break and refuses the others.
		{"next line in a value", map[string]interface{}{"s": []interface{}{"a\u0085b", "trailing\u0085"}}, false},
		{"next line in a key", map[string]interface{}{"k\u0085ey": "v"}, false},
		{"characters YAML refuses", map[string]interface{}{"s": []interface{}{"a\x7fb", "a\u0090b", "a\ufffeb", "a\uffffb"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.obj["apiVersion"], tc.obj["kind"] = "v1", "Thing"
			u := &unstructured.Unstructured{Object: tc.obj}
			before := u.DeepCopy()
			if fast := checkListPrinter(t, tc.name, u, u); fast != tc.fast {
				t.Errorf("fast way %v, want %v", fast, tc.fast)
			}
			if !reflect.DeepEqual(u, before) {
				t.Errorf("listPrinter modified the object:\n%v\nwas\n%v", u.Object, before.Object)
			}
		})
	}
	// Anything but an unstructured List goes kubectl's way.
	var got bytes.Buffer
	slow := kubectlPrinter(true, false)
	if err := (listPrinter{yaml: true, slow: slow}).PrintObj(&unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "Thing"}}, &got); err != nil {
		t.Fatal(err)
	}
	if got.String() != "apiVersion: v1\nkind: Thing\n" {
		t.Fatalf("one object: %q", got.String())
	}
}
