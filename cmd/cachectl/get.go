package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/util/jsonpath"

	"github.com/boltinformer/boltinformer/internal/admin"
)

// getOptions are the flags and arguments of cachectl get.
type getOptions struct {
	source                   sourceOptions
	namespace                string
	allNamespaces            bool
	labelSelector            string
	fieldSelector            string
	index                    string
	output                   string
	showLabels               bool
	noHeaders                bool
	sortBy                   string
	showSecrets              bool
	showManagedFields        bool
	allowMissingTemplateKeys bool
	store                    string
	labelColumns             []string
	showKind                 bool
	ignoreNotFound           bool
	watch                    bool
	watchOnly                bool
	outputWatchEvents        bool
	staleAfter               time.Duration

	// Set by complete.
	requests []getRequest
	printer  printers.ResourcePrinter
	sorter   *jsonpath.JSONPath
}

// getRequest is one resource argument with the names asked for (none: all).
type getRequest struct {
	resource string
	names    []string
}

func newGetOptions() *getOptions {
	return &getOptions{source: newSourceOptions(true), allowMissingTemplateKeys: true, staleAfter: defaultStaleAfter}
}

// AddFlags adds get's flags, named and shorthanded as kubectl's.
func (o *getOptions) AddFlags(fs *pflag.FlagSet) {
	o.source.AddFlags(fs)
	fs.StringVarP(&o.namespace, "namespace", "n", "", `Namespace to read (default "default", or the namespace the store caches)`)
	fs.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "Read every namespace")
	fs.StringVarP(&o.labelSelector, "selector", "l", "", "Label selector (e.g. -l app=web,tier!=db)")
	fs.StringVar(&o.fieldSelector, "field-selector", "", "Field selector: metadata.name, metadata.namespace; for Pods also spec.nodeName, status.phase, …")
	fs.StringVar(&o.index, "index", "", "Read through a stored index: NAME=VALUE (see cachectl info for a store's indexes)")
	fs.StringVarP(&o.output, "output", "o", "", "Output format: "+strings.Join(outputFormats, ", "))
	fs.BoolVar(&o.showLabels, "show-labels", false, "Show labels as the last column (table output)")
	fs.BoolVar(&o.noHeaders, "no-headers", false, "Print the table without headers")
	fs.StringVar(&o.sortBy, "sort-by", "", "Sort by a JSONPath field, e.g. .metadata.creationTimestamp")
	fs.BoolVar(&o.showSecrets, "show-secrets", false, "Print the data of Secrets (redacted by default)")
	fs.BoolVar(&o.showManagedFields, "show-managed-fields", false, "Keep metadata.managedFields in json and yaml output")
	fs.BoolVar(&o.allowMissingTemplateKeys, "allow-missing-template-keys", o.allowMissingTemplateKeys, "Ignore missing keys in jsonpath and go-template output")
	fs.StringVar(&o.store, "store", "", "Store to read when several stores cache the resource (see cachectl info)")
	fs.StringSliceVarP(&o.labelColumns, "label-columns", "L", nil, "Labels to show as columns, comma-separated or repeated (-L app -L tier)")
	fs.BoolVar(&o.showKind, "show-kind", false, "List the resource type of each object (kind/name)")
	fs.BoolVar(&o.ignoreNotFound, "ignore-not-found", false, "Treat a named object that does not exist as no output, not an error")
	fs.BoolVarP(&o.watch, "watch", "w", false, "After listing, print each change as it is stored (needs --socket)")
	fs.BoolVar(&o.watchOnly, "watch-only", false, "Print changes only, without listing first")
	fs.BoolVar(&o.outputWatchEvents, "output-watch-events", false, "With --watch, print the event type (ADDED, MODIFIED, DELETED) with each object")
	fs.DurationVar(&o.staleAfter, "stale-after", o.staleAfter, "Warn when a store's last write is older than this (0: never)")
}

// defaultStaleAfter is ten bookmark intervals: a store an informer keeps
// current is written at least every minute (bookmarks move its RV).
const defaultStaleAfter = 10 * time.Minute

func newGetCommand(e *env) *cobra.Command {
	o := newGetOptions()
	cmd := &cobra.Command{
		Use:   "get RESOURCE[,RESOURCE...] [NAME...] | get TYPE/NAME...",
		Short: "Print objects of a cache file, as kubectl get does",
		Long: `Print the objects a cache file holds, as kubectl get prints them from an
apiserver.

RESOURCE is what kubectl accepts: a plural, singular or short name (pods,
pod, po, cm), a kind, resource.group (deployments.apps), group/version/resource
(apps/v1/deployments, core/v1/pods), or a store's name (see cachectl info).

Without -n or -A, namespaced resources are read in the namespace "default",
unless the store caches a single namespace (then that one). The table shows
kubectl's columns for the built-in kinds (Pods: NAME READY STATUS RESTARTS
AGE, Deployments, Services, Nodes, …; NAMESPACE with -A, more with -o
wide), and NAME and AGE for other kinds. Secrets' data is redacted unless
--show-secrets.

A whole resource prints as it is read (table, wide, name, json, yaml),
holding a hundred objects at a time however many the file has; --sort-by,
templates, jsonpath and custom columns need the whole list first.

Warnings on stderr say when a store is relisting (its list may be partial),
stale (last written longer ago than --stale-after), or does not cache the
namespace asked for.

With -w, get prints the objects, then each change as the owning process
stores it (read through --socket), until interrupted.`,
		Example: `  # Pods in the default namespace, then in every namespace
  cachectl get pods --db cache.db
  cachectl get po -A --db cache.db

  # One ConfigMap as YAML, from the process that owns the file
  cachectl get cm coredns -n kube-system -o yaml --socket /run/agent.sock

  # Pods on a node, through the stored "node" index, sorted by age
  cachectl get pods -A --index node=worker-3 --sort-by .metadata.creationTimestamp --db cache.db

  # Follow changes through the running agent
  cachectl get pods -n web -w --socket /run/agent.sock

  # Selectors and templates work as in kubectl
  cachectl get pods -A -l app=web --field-selector status.phase!=Running -o name --db cache.db
  cachectl get widgets.example.com -A -o jsonpath='{.items[*].metadata.name}' --db cache.db`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf(cmd, "get: want a resource type, e.g. cachectl get pods")
			}
			return nil
		},
		ValidArgsFunction: func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			switch {
			case len(args) == 0 && strings.Contains(toComplete, "/"):
				// TYPE/NAME
				typ, _, _ := strings.Cut(toComplete, "/")
				var out []string
				for _, n := range o.completeNames(cmd.Context(), typ) {
					out = append(out, typ+"/"+n)
				}
				return out, cobra.ShellCompDirectiveNoFileComp
			case len(args) == 0:
				return o.completeResources(cmd.Context()), cobra.ShellCompDirectiveNoFileComp
			case !isTypeName(args[0]) && !strings.Contains(args[0], ","):
				return o.completeNames(cmd.Context(), args[0]), cobra.ShellCompDirectiveNoFileComp
			}
			return nil, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.complete(cmd, args); err != nil {
				return err
			}
			return o.run(cmd.Context(), e)
		},
	}
	o.AddFlags(cmd.Flags())
	_ = cmd.RegisterFlagCompletionFunc("output", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return outputFormats, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	})
	_ = cmd.RegisterFlagCompletionFunc("namespace", func(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
		return o.completeNamespaces(cmd.Context()), cobra.ShellCompDirectiveNoFileComp
	})
	_ = cmd.RegisterFlagCompletionFunc("store", func(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
		var names []string
		if info := o.completeInfo(cmd.Context()); info != nil {
			for _, s := range info.Stores {
				names = append(names, s.Name)
			}
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

// complete checks the flags and parses the arguments.
func (o *getOptions) complete(cmd *cobra.Command, args []string) error {
	if err := o.source.Validate(cmd); err != nil {
		return err
	}
	// As kubectl: -A lists every namespace and ignores -n.
	var err error
	if o.printer, err = objectPrinter(cmd, o.output, o.allowMissingTemplateKeys, o.showManagedFields, o.noHeaders); err != nil {
		return err
	}
	if o.sortBy != "" {
		if o.sorter, err = sortField(o.sortBy); err != nil {
			return usageErrorf(cmd, "--sort-by %q: %v", o.sortBy, err)
		}
	}
	if o.outputWatchEvents && !o.watching() {
		return usageErrorf(cmd, "--output-watch-events option can only be used with --watch or --watch-only")
	}
	if o.staleAfter < 0 {
		return usageErrorf(cmd, "--stale-after must not be negative, got %s", o.staleAfter)
	}
	if isTypeName(args[0]) {
		for _, a := range args {
			if !isTypeName(a) {
				return usageErrorf(cmd, "there is no need to give a resource type as a separate argument with TYPE/NAME: %q", a)
			}
			t, n, _ := strings.Cut(a, "/")
			if n == "" {
				return usageErrorf(cmd, "%q: want TYPE/NAME", a)
			}
			o.requests = append(o.requests, getRequest{resource: t, names: []string{n}})
		}
	} else {
		for _, r := range strings.Split(args[0], ",") {
			if r == "" {
				return usageErrorf(cmd, "empty resource type in %q", args[0])
			}
			o.requests = append(o.requests, getRequest{resource: r, names: args[1:]})
		}
	}
	if o.allNamespaces && len(args) > 1 || o.allNamespaces && isTypeName(args[0]) {
		return usageErrorf(cmd, "a resource cannot be retrieved by name across all namespaces")
	}
	if o.watching() {
		if len(o.requests) != 1 || len(o.requests[0].names) > 1 {
			return usageErrorf(cmd, "--watch takes one resource type and at most one name")
		}
		if o.index != "" {
			return usageErrorf(cmd, "--index cannot be used with --watch (select with -l or --field-selector)")
		}
		if o.source.db != "" {
			// The file cachectl holds open cannot change: a writer needs
			// its lock, and waits for cachectl to let go of it.
			return usageErrorf(cmd, "--watch needs the owner's --socket: no process can write %s while cachectl reads it with --db", o.source.db)
		}
		if o.sortBy != "" {
			fmt.Fprintf(cmd.ErrOrStderr(), "warning: --watch requested, --sort-by will be ignored for watch events received\n")
		}
	}
	return nil
}

func (o *getOptions) watching() bool { return o.watch || o.watchOnly }

// byName reports whether every request names its objects: the reads are
// point reads, by key.
func (o *getOptions) byName() bool {
	for _, req := range o.requests {
		if len(req.names) == 0 {
			return false
		}
	}
	return len(o.requests) > 0 && !o.watching()
}

// isTypeName tells TYPE/NAME from group/version/resource and version/resource.
func isTypeName(arg string) bool {
	parts := strings.Split(arg, "/")
	return len(parts) == 2 && !versionRE.MatchString(parts[0])
}

// fetched is what one request returned.
type fetched struct {
	res       resource
	namespace string
	items     []*unstructured.Unstructured
	// objects, instead of items, are what a table read from a file
	// fetched: the store's decoded objects (objectLister).
	objects []k8sruntime.Object
}

// len is how many objects f holds.
func (f *fetched) len() int { return len(f.items) + len(f.objects) }

func (o *getOptions) run(ctx context.Context, e *env) error {
	open := o.source.openInfo
	if o.byName() {
		open = o.source.openBriefInfo
	}
	r, info, err := open(ctx)
	if err != nil {
		return err
	}
	defer r.Close()
	resolver := newResolver(info)
	if o.watching() {
		res, err := resolver.resolve(o.requests[0].resource, o.store)
		if err != nil {
			return err
		}
		o.warn(e, res)
		return o.runWatch(ctx, e, r, res)
	}

	reqs := make([]resolvedRequest, len(o.requests))
	for i, req := range o.requests {
		res, err := resolver.resolve(req.resource, o.store)
		if err != nil {
			return err
		}
		o.warn(e, res)
		reqs[i] = resolvedRequest{res: res, names: req.names, namespace: o.namespaceFor(res)}
	}
	switch {
	case o.streams() && o.printer == nil:
		return o.streamTables(ctx, e, r, reqs)
	case o.streams():
		return o.streamObjects(ctx, e, r, reqs)
	}

	// A table without --sort-by reads a file's decoded objects, as
	// streamTables does; the -o printers and sorting read the JSON form.
	objects, _ := r.(objectLister)
	if o.printer != nil || o.sorter != nil {
		objects = nil
	}
	var results []fetched
	var missing []string
	for _, req := range reqs {
		res := req.res
		f := fetched{res: res, namespace: req.namespace}
		q := o.query(res, f.namespace)
		list := func(q admin.Query) error {
			if objects != nil {
				return objects.ListObjects(ctx, q, func(obj k8sruntime.Object) error {
					f.objects = append(f.objects, obj)
					return nil
				})
			}
			return r.List(ctx, q, func(u *unstructured.Unstructured) error {
				f.items = append(f.items, u)
				return nil
			})
		}
		if len(req.names) == 0 {
			if err := list(q); err != nil {
				return queryError(err)
			}
		}
		for _, name := range req.names {
			q.Name = name
			before := f.len()
			if err := list(q); err != nil {
				return queryError(err)
			}
			if f.len() == before && !o.ignoreNotFound {
				missing = append(missing, notFound(res, name, f.namespace))
			}
		}
		if o.sorter != nil {
			if err := sortItems(f.items, o.sorter); err != nil {
				return err
			}
		}
		results = append(results, f)
	}
	if err := o.print(e, results); err != nil {
		return err
	}
	if len(missing) > 0 {
		return newError(errNotFound, "%s", strings.Join(missing, "; "))
	}
	return nil
}

// notFound says that res name is not in namespace ns ("" for a
// cluster-scoped resource) in kubectl's words (kubectl logs'): naming the
// namespace shows a mistyped -n ("-namespace x" parses as -n amespace).
func notFound(res resource, name, ns string) string {
	if ns == "" {
		return fmt.Sprintf("%s %q not found", res, name)
	}
	return fmt.Sprintf("%s %q not found in namespace %q", res, name, ns)
}

// query is the admin query for res in namespace ns. A table of a kind
// without kubectl columns and -o name need only metadata, which skips
// encoding the rest of every object.
func (o *getOptions) query(res resource, ns string) admin.Query {
	_, hasColumns := columnsFor(res.gvk.GroupKind())
	metadataOnly := (o.output == "" && !hasColumns || o.output == "name") &&
		(o.sorter == nil || strings.HasPrefix(strings.TrimLeft(o.sortBy, "{."), "metadata."))
	return admin.Query{
		Store:         res.store.Name,
		Namespace:     ns,
		LabelSelector: o.labelSelector,
		FieldSelector: o.fieldSelector,
		Index:         o.index,
		MetadataOnly:  metadataOnly,
		// -o name reads keys only: it works without a sealed store's key.
		KeysOnly:    o.output == "name" && o.sorter == nil,
		ShowSecrets: o.showSecrets,
	}
}

// queryError makes a bad query (a selector that does not parse, an
// unknown field label or index) a usage error.
func queryError(err error) error {
	if errors.Is(err, admin.ErrBadQuery) {
		return &usageError{msg: strings.TrimPrefix(err.Error(), admin.ErrBadQuery.Error()+": ")}
	}
	return err
}

// namespaceFor is the namespace to read for res ("" for every namespace).
func (o *getOptions) namespaceFor(res resource) string {
	switch {
	case !res.namespaced, o.allNamespaces:
		return ""
	case o.namespace != "":
		return o.namespace
	case res.store.Identity != nil && res.store.Identity.Namespace != "":
		return res.store.Identity.Namespace
	}
	return "default"
}
