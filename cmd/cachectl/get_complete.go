package main

// Shell completion for cachectl get: resource types, namespaces and
// object names read from the --db or --socket source.

import (
	"context"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/boltinformer/boltinformer/internal/admin"
)

// completeResources lists the resource names of the file for shell completion.
func (o *getOptions) completeResources(ctx context.Context) []string {
	if info := o.completeInfo(ctx); info != nil {
		return newResolver(info).resourceNames()
	}
	return nil
}

// completeNamespaces lists the namespaces of the file's objects and the
// namespaces stores are scoped to, for shell completion.
func (o *getOptions) completeNamespaces(ctx context.Context) []string {
	info := o.completeInfo(ctx)
	if info == nil {
		return nil
	}
	set := map[string]bool{}
	for _, s := range info.Stores {
		for _, ns := range s.Namespaces {
			set[ns] = true
		}
		if s.Identity != nil && s.Identity.Namespace != "" {
			set[s.Identity.Namespace] = true
		}
	}
	out := make([]string, 0, len(set))
	for ns := range set {
		out = append(out, ns)
	}
	sort.Strings(out)
	return out
}

// completeNames lists the names of the objects of resource in the
// namespace get would read (-n, -A, or the default), for shell completion.
func (o *getOptions) completeNames(ctx context.Context, resourceArg string) []string {
	if ctx == nil {
		ctx = context.Background()
	}
	r, info := o.completeOpen(ctx)
	if r == nil {
		return nil
	}
	defer r.Close()
	res, err := newResolver(info).resolve(resourceArg, o.store)
	if err != nil {
		return nil
	}
	var names []string
	q := admin.Query{Store: res.store.Name, Namespace: o.namespaceFor(res), LabelSelector: o.labelSelector, MetadataOnly: true}
	_ = r.List(ctx, q, func(u *unstructured.Unstructured) error {
		names = append(names, u.GetName())
		return nil
	})
	sort.Strings(names)
	return names
}

// completeInfo reads the file's info for completion (nil on any error).
func (o *getOptions) completeInfo(ctx context.Context) *admin.Info {
	r, info := o.completeOpen(ctx)
	if r == nil {
		return nil
	}
	r.Close()
	return info
}

// completeOpen opens the --db or --socket source and reads its info for
// completion; it returns a nil reader on any error (completion says nothing).
func (o *getOptions) completeOpen(ctx context.Context) (admin.Reader, *admin.Info) {
	if o.source.db == "" && o.source.socket == "" {
		return nil, nil
	}
	if ctx == nil {
		ctx = context.Background()
	}
	r, info, err := o.source.openInfo(ctx)
	if err != nil {
		return nil, nil
	}
	return r, info
}
