package main

import (
	"fmt"
	"time"

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
	cells func(u *unstructured.Unstructured, now time.Time) ([]interface{}, error)
}

// typedCells converts the unstructured object to its v1 Go type and fills
// the row from it.
func typedCells[T any, PT interface {
	*T
	runtime.Object
}](fn func(obj PT, now time.Time) []interface{}) func(*unstructured.Unstructured, time.Time) ([]interface{}, error) {
	return func(u *unstructured.Unstructured, now time.Time) ([]interface{}, error) {
		obj := PT(new(T))
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
			return nil, fmt.Errorf("%s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
		}
		return fn(obj, now), nil
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
