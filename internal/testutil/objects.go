package testutil

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// PodOption changes a Pod that Pod builds. Tests that need a field no
// option sets pass their own func.
type PodOption func(*v1.Pod)

// Pod is the Pod ns/name at resourceVersion rv (each may be empty), with
// opts applied in order. It has no labels unless an option adds them.
func Pod(ns, name, rv string, opts ...PodOption) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv}}
	for _, o := range opts {
		o(p)
	}
	return p
}

// Label sets the label key to value.
func Label(key, value string) PodOption {
	return func(p *v1.Pod) {
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[key] = value
	}
}

// Node sets spec.nodeName.
func Node(name string) PodOption {
	return func(p *v1.Pod) { p.Spec.NodeName = name }
}

// UID sets metadata.uid.
func UID(uid string) PodOption {
	return func(p *v1.Pod) { p.UID = types.UID(uid) }
}

// Pad adds an annotation "pad" of n bytes, to make the object that much
// larger.
func Pad(n int) PodOption {
	return func(p *v1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations["pad"] = strings.Repeat("x", n)
	}
}

// PodIndexers are IndexFuncs on Pods of every shape an index takes:
// single-valued (namespace, node), multi-valued (one "k=v" per label) and
// empty or with duplicates ("none-or-app": nothing without an app label,
// else the app twice and "any").
func PodIndexers() cache.Indexers {
	return cache.Indexers{
		cache.NamespaceIndex: cache.MetaNamespaceIndexFunc,
		"node": func(obj any) ([]string, error) {
			return []string{obj.(*v1.Pod).Spec.NodeName}, nil
		},
		"labels": func(obj any) ([]string, error) {
			var out []string
			for k, v := range obj.(*v1.Pod).Labels {
				out = append(out, k+"="+v)
			}
			return out, nil
		},
		"none-or-app": func(obj any) ([]string, error) {
			if app, ok := obj.(*v1.Pod).Labels["app"]; ok {
				return []string{app, app, "any"}, nil // duplicates on purpose
			}
			return nil, nil
		},
	}
}

// RVOf is obj's resourceVersion, or "?" for what has no object metadata
// (a cache.DeletedFinalStateUnknown), for handlers that record events.
func RVOf(obj any) string {
	if m, err := meta.Accessor(obj); err == nil {
		return m.GetResourceVersion()
	}
	return "?"
}
