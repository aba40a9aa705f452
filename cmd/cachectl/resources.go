package main

import (
	"regexp"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/boltinformer/boltinformer/internal/admin"
)

// shortNames are the short names the apiserver advertises for built-in
// resources (what kubectl learns from discovery), offline.
var shortNames = map[string]schema.GroupResource{
	"po":     {Resource: "pods"},
	"svc":    {Resource: "services"},
	"cm":     {Resource: "configmaps"},
	"ns":     {Resource: "namespaces"},
	"no":     {Resource: "nodes"},
	"ep":     {Resource: "endpoints"},
	"ev":     {Resource: "events"},
	"pv":     {Resource: "persistentvolumes"},
	"pvc":    {Resource: "persistentvolumeclaims"},
	"sa":     {Resource: "serviceaccounts"},
	"rc":     {Resource: "replicationcontrollers"},
	"limits": {Resource: "limitranges"},
	"quota":  {Resource: "resourcequotas"},
	"cs":     {Resource: "componentstatuses"},
	"deploy": {Group: "apps", Resource: "deployments"},
	"rs":     {Group: "apps", Resource: "replicasets"},
	"ds":     {Group: "apps", Resource: "daemonsets"},
	"sts":    {Group: "apps", Resource: "statefulsets"},
	"cj":     {Group: "batch", Resource: "cronjobs"},
	"hpa":    {Group: "autoscaling", Resource: "horizontalpodautoscalers"},
	"pdb":    {Group: "policy", Resource: "poddisruptionbudgets"},
	"ing":    {Group: "networking.k8s.io", Resource: "ingresses"},
	"netpol": {Group: "networking.k8s.io", Resource: "networkpolicies"},
	"sc":     {Group: "storage.k8s.io", Resource: "storageclasses"},
	"pc":     {Group: "scheduling.k8s.io", Resource: "priorityclasses"},
	"csr":    {Group: "certificates.k8s.io", Resource: "certificatesigningrequests"},
	"crd":    {Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"},
	"crds":   {Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"},
}

// clusterScoped are the built-in resources that have no namespace.
var clusterScoped = map[schema.GroupResource]bool{}

func init() {
	for group, resources := range map[string][]string{
		"":                             {"nodes", "namespaces", "persistentvolumes", "componentstatuses"},
		"rbac.authorization.k8s.io":    {"clusterroles", "clusterrolebindings"},
		"storage.k8s.io":               {"storageclasses", "csidrivers", "csinodes", "volumeattachments", "volumeattributesclasses"},
		"scheduling.k8s.io":            {"priorityclasses"},
		"node.k8s.io":                  {"runtimeclasses"},
		"networking.k8s.io":            {"ingressclasses", "ipaddresses", "servicecidrs"},
		"certificates.k8s.io":          {"certificatesigningrequests", "clustertrustbundles"},
		"apiextensions.k8s.io":         {"customresourcedefinitions"},
		"apiregistration.k8s.io":       {"apiservices"},
		"flowcontrol.apiserver.k8s.io": {"flowschemas", "prioritylevelconfigurations"},
		"resource.k8s.io":              {"deviceclasses", "resourceslices"},
		"internal.apiserver.k8s.io":    {"storageversions"},
		"admissionregistration.k8s.io": {"mutatingwebhookconfigurations", "validatingwebhookconfigurations",
			"validatingadmissionpolicies", "validatingadmissionpolicybindings",
			"mutatingadmissionpolicies", "mutatingadmissionpolicybindings"},
	} {
		for _, r := range resources {
			clusterScoped[schema.GroupResource{Group: group, Resource: r}] = true
		}
	}
}

// resource is a store resolved from a kubectl-style resource name.
type resource struct {
	store      admin.StoreInfo
	gvk        schema.GroupVersionKind
	gvr        schema.GroupVersionResource
	namespaced bool
}

// String names the resource as kubectl does: "pods", "widgets.example.com".
func (r resource) String() string {
	return r.gvr.GroupResource().String()
}

// resolver maps resource names to the file's stores, offline: a
// DefaultRESTMapper built from the stores' identities, kubectl's short
// names of the built-in resources, and the scope from a built-in table
// (or, for unknown types, from the stored keys).
type resolver struct {
	info   *admin.Info
	mapper *meta.DefaultRESTMapper
	// byGVR lists the stores of each resource (more than one when
	// informers with different selectors cache the same type).
	byGVR map[schema.GroupVersionResource][]resource
}

func newResolver(info *admin.Info) *resolver {
	r := &resolver{info: info, mapper: meta.NewDefaultRESTMapper(nil), byGVR: map[schema.GroupVersionResource][]resource{}}
	for _, s := range info.Stores {
		id := s.Identity
		if id == nil || id.Kind == "" || id.Version == "" {
			continue
		}
		gvk := schema.GroupVersionKind{Group: id.Group, Version: id.Version, Kind: id.Kind}
		plural, singular := meta.UnsafeGuessKindToResource(gvk)
		if id.Resource != "" {
			plural = gvk.GroupVersion().WithResource(id.Resource)
		}
		res := resource{store: s, gvk: gvk, gvr: plural, namespaced: namespaced(plural.GroupResource(), gvk, s)}
		scope := meta.RESTScopeNamespace
		if !res.namespaced {
			scope = meta.RESTScopeRoot
		}
		r.mapper.AddSpecific(gvk, plural, singular, scope)
		r.byGVR[plural] = append(r.byGVR[plural], res)
	}
	return r
}

// namespaced tells a resource's scope: built-in types from the table,
// others from the store's keys (namespaced when unknown).
func namespaced(gr schema.GroupResource, gvk schema.GroupVersionKind, s admin.StoreInfo) bool {
	if clusterScoped[gr] {
		return false
	}
	if scheme.Scheme.Recognizes(gvk) {
		return true
	}
	return s.Namespaced == nil || *s.Namespaced
}

var versionRE = regexp.MustCompile(`^v[0-9]+((alpha|beta)[0-9]+)?$`)

// resolve finds the store for arg, which may be a plural, singular or
// short name, a kind, resource.group, resource.version.group,
// group/version/resource (core as "" or "core") or version/resource, or a
// store's name. store, when set, picks among several stores of one resource.
func (r *resolver) resolve(arg, store string) (resource, error) {
	var gvrs []schema.GroupVersionResource
	if strings.Contains(arg, "/") {
		parts := strings.Split(arg, "/")
		var gvr schema.GroupVersionResource
		switch {
		case len(parts) == 3:
			gvr = schema.GroupVersionResource{Group: parts[0], Version: parts[1], Resource: parts[2]}
			if gvr.Group == "core" {
				gvr.Group = ""
			}
		case len(parts) == 2 && versionRE.MatchString(parts[0]):
			gvr = schema.GroupVersionResource{Version: parts[0], Resource: parts[1]}
		}
		if gvr.Resource != "" {
			if got, err := r.mapper.ResourcesFor(gvr); err == nil {
				gvrs = got
			} else if gr, ok := shortNames[strings.ToLower(gvr.Resource)]; ok && gr.Group == gvr.Group {
				gvrs, _ = r.mapper.ResourcesFor(gr.WithVersion(gvr.Version))
			}
		}
	} else {
		gvrs = r.lookup(arg)
	}
	var candidates []resource
	seen := map[schema.GroupVersionResource]bool{}
	for _, gvr := range preferCore(gvrs) {
		// A resource whose singular and plural are one word (endpoints)
		// is found twice.
		if !seen[gvr] {
			seen[gvr] = true
			candidates = append(candidates, r.byGVR[gvr]...)
		}
	}
	if len(candidates) == 0 {
		for _, s := range r.info.Stores {
			if s.Name == arg {
				return r.forStore(s), nil
			}
		}
		return resource{}, r.unknown(arg)
	}
	if store != "" {
		for _, c := range candidates {
			if c.store.Name == store {
				return c, nil
			}
		}
		return resource{}, newError(errUnknownResource, "no store named %q holds %q (stores: %s)", store, arg, storeNames(candidates))
	}
	if len(candidates) > 1 {
		return resource{}, newError(errAmbiguous, "%q matches %d stores (%s); pick one with --store", arg, len(candidates), storeNames(candidates))
	}
	return candidates[0], nil
}

// lookup resolves a name without slashes through the mapper, after
// expanding short names.
func (r *resolver) lookup(arg string) []schema.GroupVersionResource {
	fully, gr := schema.ParseResourceArg(strings.ToLower(arg))
	if fully != nil {
		if gvrs, err := r.mapper.ResourcesFor(*fully); err == nil {
			return gvrs
		}
	}
	if gvrs, err := r.mapper.ResourcesFor(gr.WithVersion("")); err == nil {
		return gvrs
	}
	if short, ok := shortNames[strings.ToLower(arg)]; ok {
		if gvrs, err := r.mapper.ResourcesFor(short.WithVersion("")); err == nil {
			return gvrs
		}
	}
	return nil
}

// preferCore keeps only the core group's resource when a name matches
// several groups (events and events.events.k8s.io), as kubectl does.
func preferCore(gvrs []schema.GroupVersionResource) []schema.GroupVersionResource {
	for _, g := range gvrs {
		if g.Group == "" {
			var core []schema.GroupVersionResource
			for _, g := range gvrs {
				if g.Group == "" {
					core = append(core, g)
				}
			}
			return core
		}
	}
	return gvrs
}

// forStore makes a resource of a store named directly (its identity may
// be missing).
func (r *resolver) forStore(s admin.StoreInfo) resource {
	for _, list := range r.byGVR {
		for _, c := range list {
			if c.store.Name == s.Name {
				return c
			}
		}
	}
	return resource{store: s, gvr: schema.GroupVersionResource{Resource: s.Name}, namespaced: s.Namespaced == nil || *s.Namespaced}
}

// unknown explains that arg names nothing cached in the file.
func (r *resolver) unknown(arg string) error {
	var have []string
	seen := map[string]bool{}
	for _, list := range r.byGVR {
		for _, c := range list {
			if n := c.String(); !seen[n] {
				seen[n] = true
				have = append(have, n)
			}
		}
	}
	sort.Strings(have)
	cached := "nothing"
	if len(have) > 0 {
		cached = strings.Join(have, ", ")
	}
	return newError(errUnknownResource, "the cache file has no resource type %q (it caches: %s)", arg, cached)
}

func storeNames(rs []resource) string {
	names := make([]string, len(rs))
	for i, r := range rs {
		names[i] = r.store.Name
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// resourceNames lists what get accepts for the file's stores (completion).
func (r *resolver) resourceNames() []string {
	var out []string
	for gvr := range r.byGVR {
		out = append(out, gvr.GroupResource().String())
	}
	sort.Strings(out)
	return out
}
