package main

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The default columns of kubectl get for the built-in kinds, derived from
// the semantics of the apiserver's table printers (kubernetes
// pkg/printers/internalversion) without depending on k8s.io/kubernetes:
// the same column names, priorities (1: only with -o wide) and cell
// rules, applied to the v1 types the cache stores. A kind without an
// entry gets kubectl's default for types without printer columns: NAME
// and AGE (plus RESOURCEVERSION, UID and OWNER with -o wide).

// kindColumns are the table columns of one kind and how to fill a row.
type kindColumns struct {
	columns []metav1.TableColumnDefinition
	// cells returns one cell per column (wide ones included: the table
	// printer drops priority-1 columns unless -o wide).
	cells cellRule
}

// cellRule fills a row from either form an object reaches a table in:
// the JSON form List and the admin socket return, or the Go object a
// file's store decoded (admin.Local.ListObjects), which skips the JSON
// round trip. Both give the same cells.
type cellRule struct {
	unstructured func(u *unstructured.Unstructured, now time.Time) ([]interface{}, error)
	// typed fills the row from a decoded object of the kind's Go type; it
	// reports false for any other object (one of a type this build does
	// not know), whose row the unstructured rule fills.
	typed func(obj runtime.Object, now time.Time) ([]interface{}, bool)
}

// row fills the row of obj: with the typed rule when it takes obj, from
// obj's JSON form otherwise.
func (r cellRule) row(obj runtime.Object, now time.Time) ([]interface{}, error) {
	if r.typed != nil {
		if cells, ok := r.typed(obj, now); ok {
			return validCells(cells), nil
		}
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return nil, fmt.Errorf("%T: %w", obj, err)
		}
		u = &unstructured.Unstructured{Object: content}
	}
	cells, err := r.unstructured(u, now)
	return validCells(cells), err
}

// validCells replaces, in the string cells of a row filled from a decoded
// object, each byte that is not valid UTF-8 with U+FFFD, as encoding/json
// does in the JSON form: protobuf does not check UTF-8, and an Event's
// message may hold any bytes.
func validCells(cells []interface{}) []interface{} {
	for i, c := range cells {
		s, ok := c.(string)
		if !ok || utf8.ValidString(s) {
			continue
		}
		// Ranging over a string yields U+FFFD for each invalid byte.
		var b strings.Builder
		for _, r := range s {
			b.WriteRune(r)
		}
		cells[i] = b.String()
	}
	return cells
}

// typedCells fills the row from the kind's v1 Go type: a decoded object
// directly, an unstructured one once converted to it.
func typedCells[T any, PT interface {
	*T
	runtime.Object
}](fn func(obj PT, now time.Time) []interface{}) cellRule {
	return cellRule{
		unstructured: func(u *unstructured.Unstructured, now time.Time) ([]interface{}, error) {
			obj := PT(new(T))
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
				return nil, fmt.Errorf("%s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
			}
			return fn(obj, now), nil
		},
		typed: func(obj runtime.Object, now time.Time) ([]interface{}, bool) {
			o, ok := obj.(PT)
			if !ok {
				return nil, false
			}
			return fn(o, now), true
		},
	}
}

func col(name, typ string) metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: name, Type: typ}
}

func wideCol(name, typ string) metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: name, Type: typ, Priority: 1}
}

var nameCol = metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name"}

// builtinColumns maps a built-in kind to its kubectl columns; each kind's
// columns and cell rules are in the file of its group (columns_*.go).
var builtinColumns = map[schema.GroupKind]kindColumns{
	{Kind: "Pod"}:                                      podColumns,
	{Group: "apps", Kind: "Deployment"}:                deploymentColumns,
	{Group: "apps", Kind: "ReplicaSet"}:                replicaSetColumns,
	{Group: "apps", Kind: "StatefulSet"}:               statefulSetColumns,
	{Group: "apps", Kind: "DaemonSet"}:                 daemonSetColumns,
	{Group: "batch", Kind: "Job"}:                      jobColumns,
	{Group: "batch", Kind: "CronJob"}:                  cronJobColumns,
	{Kind: "Service"}:                                  serviceColumns,
	{Kind: "Node"}:                                     nodeColumns,
	{Kind: "Namespace"}:                                namespaceColumns,
	{Kind: "ConfigMap"}:                                configMapColumns,
	{Kind: "Secret"}:                                   secretColumns,
	{Kind: "ServiceAccount"}:                           serviceAccountColumns,
	{Kind: "Endpoints"}:                                endpointsColumns,
	{Group: "discovery.k8s.io", Kind: "EndpointSlice"}: endpointSliceColumns,
	{Kind: "PersistentVolume"}:                         persistentVolumeColumns,
	{Kind: "PersistentVolumeClaim"}:                    persistentVolumeClaimColumns,
	{Kind: "Event"}:                                    eventColumns,
	{Group: "networking.k8s.io", Kind: "Ingress"}:      ingressColumns,
}

// columnsFor returns the kubectl columns of a kind, if it has any.
func columnsFor(gk schema.GroupKind) (kindColumns, bool) {
	c, ok := builtinColumns[gk]
	return c, ok
}
