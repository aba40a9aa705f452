package main

// The -o json and -o yaml printers of a streamed List: kubectl's bytes
// without the detours its printers take to get them.

import (
	"encoding/json"
	"fmt"
	"io"
	"unicode/utf8"

	"go.yaml.in/yaml/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"
)

// listPrinter prints an unstructured List of JSON-form objects (what List
// returns) byte for byte as kubectl's printer does (slow, wrapped in
// printers.OmitManagedFieldsPrinter unless showManagedFields), and hands
// anything else to slow.
//
// kubectl's JSON printer marshals the List through its MarshalJSON and
// indents what comes out; listPrinter indents the List's map, the same
// bytes without the second pass over them. kubectl's YAML printer
// (sigs.k8s.io/yaml) writes JSON, has go.yaml.in/yaml/v2 read it and
// writes what it read; listPrinter hands yaml.v2 the values it would
// have read, which are the List's own for the types a JSON-form object
// holds: strings (valid UTF-8), int64, bool, nil, maps and slices of
// them. An object with anything else (a float, invalid UTF-8) goes the
// slow way.
type listPrinter struct {
	yaml              bool
	showManagedFields bool
	slow              printers.ResourcePrinter
}

func (p listPrinter) PrintObj(obj runtime.Object, w io.Writer) error {
	list, ok := obj.(*unstructured.UnstructuredList)
	if !ok {
		return p.slow.PrintObj(obj, w)
	}
	m, ok := p.listMap(list)
	if !ok {
		return p.slow.PrintObj(obj, w)
	}
	var data []byte
	var err error
	if p.yaml {
		data, err = yaml.Marshal(m)
	} else {
		data, err = json.MarshalIndent(m, "", "    ")
		data = append(data, '\n')
	}
	if err != nil {
		return fmt.Errorf("print a List of %d: %w", len(list.Items), err)
	}
	_, err = w.Write(data)
	return err
}

// listMap is the map kubectl's printer encodes for list (the list's
// fields and its items, as UnstructuredList's MarshalJSON has them),
// without the items' managedFields unless shown. It shares list's
// values and modifies none. It reports false when a value is not one
// yaml.v2 would read back from its JSON as it is.
func (p listPrinter) listMap(list *unstructured.UnstructuredList) (map[string]interface{}, bool) {
	m := make(map[string]interface{}, len(list.Object)+1)
	for k, v := range list.Object {
		m[k] = v
	}
	items := make([]interface{}, len(list.Items))
	for i := range list.Items {
		item := list.Items[i].Object
		if !p.showManagedFields {
			item = withoutManagedFields(item)
		}
		items[i] = item
	}
	m["items"] = items
	if p.yaml && !readsBackAsIs(m) {
		return nil, false
	}
	return m, true
}

// withoutManagedFields returns obj without metadata.managedFields (what
// Unstructured.SetManagedFields(nil) leaves), copying only what it
// changes.
func withoutManagedFields(obj map[string]interface{}) map[string]interface{} {
	md, ok := obj["metadata"].(map[string]interface{})
	if !ok {
		return obj
	}
	if _, ok := md["managedFields"]; !ok {
		return obj
	}
	out := make(map[string]interface{}, len(obj))
	for k, v := range obj {
		out[k] = v
	}
	mdOut := make(map[string]interface{}, len(md))
	for k, v := range md {
		if k != "managedFields" {
			mdOut[k] = v
		}
	}
	out["metadata"] = mdOut
	return out
}

// readsBackAsIs reports whether yaml.v2, reading the JSON encoding/json
// writes for v, gets v back as yaml.v2 writes it: strings yamlReadsAsIs,
// integers, booleans, nulls, and maps and slices of them. Floats are not:
// encoding/json writes 1e6 as 1000000, which yaml.v2 reads as an integer.
func readsBackAsIs(v interface{}) bool {
	switch v := v.(type) {
	case nil, bool, int64:
		return true
	case string:
		return yamlReadsAsIs(v)
	case map[string]interface{}:
		for k, e := range v {
			if !yamlReadsAsIs(k) || !readsBackAsIs(e) {
				return false
			}
		}
		return true
	case []interface{}:
		for _, e := range v {
			if !readsBackAsIs(e) {
				return false
			}
		}
		return true
	}
	return false
}

// yamlReadsAsIs reports whether yaml.v2 reads s back from encoding/json's
// encoding of it: s is valid UTF-8 (encoding/json replaces invalid bytes)
// and has none of the characters encoding/json leaves unescaped that
// yaml.v2's reader takes for a line break (U+0085, folded to a space) or
// refuses ("control characters are not allowed": DEL, the other C1
// controls, U+FFFE, U+FFFF).
func yamlReadsAsIs(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r == 0x7f || r >= 0x80 && r <= 0x9f || r == 0xfffe || r == 0xffff {
			return false
		}
	}
	return true
}
