package main

import (
	"strings"
	"testing"

	"github.com/boltinformer/boltinformer/internal/testutil"
)

func TestGetGolden(t *testing.T) {
	db := "--db=" + fixtureFile
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"get_pods", []string{"get", "pods"}},
		{"get_pods_all", []string{"get", "po", "-A"}},
		{"get_pods_wide_labels", []string{"get", "pod", "-A", "-o", "wide", "--show-labels"}},
		{"get_pods_configmaps", []string{"get", "pods,cm", "-A"}},
		{"get_pods_json", []string{"get", "pods", "-A", "-o", "json"}},
		{"get_pods_yaml", []string{"get", "pods", "-n", "kube-system", "-o", "yaml"}},
		{"get_pod_json", []string{"get", "pod", "web-0", "-o", "json"}},
		{"get_configmap_yaml", []string{"get", "configmap", "coredns", "-n", "kube-system", "-o", "yaml"}},
		{"get_secrets_yaml", []string{"get", "secrets", "-A", "-o", "yaml"}},
		{"get_widgets_json", []string{"get", "widgets.example.com", "-A", "-o", "json"}},
		{"get_widgets_table", []string{"get", "widget", "-A"}},
		{"get_gadgets_yaml", []string{"get", "gadgets", "-o", "yaml"}},
		{"get_empty_json", []string{"get", "pods", "-n", "nowhere", "-o", "json"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := testutil.StatFile(t, fixtureFile)
			r := cachectl(t, append(tc.args, db)...).ok(t)
			golden(t, tc.name, r.stdout)
			testutil.Unchanged(t, fixtureFile, before)
		})
	}
}

func TestGet(t *testing.T) {
	db := "--db=" + fixtureFile
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"name output", []string{"get", "pods", "-A", "-o", "name"}, "pod/db-0\npod/web-0\npod/web-1\npod/dns-0\npod/job-7\n"},
		{"label selector", []string{"get", "pods", "-A", "-l", "app in (web,db),tier!=front", "-o", "name"}, "pod/db-0\n"},
		{"field selector", []string{"get", "pods", "-A", "--field-selector", "spec.nodeName=node-2,status.phase=Running", "-o", "name"}, "pod/web-1\npod/dns-0\n"},
		{"field selector name", []string{"get", "cm", "-A", "--field-selector", "metadata.name!=coredns", "-o", "name"}, "configmap/app-config\n"},
		{"index", []string{"get", "pods", "-A", "--index", "node=node-1", "-o", "name"}, "pod/db-0\npod/web-0\n"},
		{"namespace without index", []string{"get", "cm", "-n", "kube-system", "-o", "name"}, "configmap/coredns\n"},
		{"jsonpath", []string{"get", "pods", "-o", "jsonpath={.items[*].metadata.name}"}, "db-0 web-0 web-1"},
		{"go-template", []string{"get", "pods", "-A", "-o", "go-template={{range .items}}{{.spec.nodeName}} {{end}}"}, "node-1 node-1 node-2 node-2 <no value> "},
		{"sort by age", []string{"get", "pods", "-A", "--sort-by", ".metadata.creationTimestamp", "-o", "name"}, "pod/job-7\npod/dns-0\npod/db-0\npod/web-1\npod/web-0\n"},
		{"sort by rv, table", []string{"get", "pods", "--sort-by", "{.metadata.resourceVersion}", "--no-headers"}, "web-0   0/1   Running   0     60m\nweb-1   0/1   Running   0     65m\ndb-0    0/1   Pending   0     4h\n"},
		// kubectl: -A lists every namespace and ignores -n (checked in kubectl's get.go: AllNamespaces clears ExplicitNamespace).
		{"-A overrides -n", []string{"get", "pods", "-n", "nowhere", "-A", "-o", "name"}, "pod/db-0\npod/web-0\npod/web-1\npod/dns-0\npod/job-7\n"},
		{"-L label columns", []string{"get", "pods", "-L", "app", "-L", "tier"}, "NAME    READY   STATUS    RESTARTS   AGE   APP   TIER\ndb-0    0/1     Pending   0          4h    db    \nweb-0   0/1     Running   0          60m   web   front\nweb-1   0/1     Running   0          65m   web   front\n"},
		{"-L comma list", []string{"get", "pods", "--no-headers", "-L", "app,tier", "web-0"}, "web-0   0/1   Running   0     60m   web   front\n"},
		{"--show-kind", []string{"get", "cm", "--show-kind"}, "NAME                   DATA   AGE\nconfigmap/app-config   1      70m\n"},
		{"custom-columns", []string{"get", "pods", "-A", "-o", "custom-columns=NAME:.metadata.name,NODE:spec.nodeName,IMAGES:{.spec.containers[*].image},MISSING:.status.podIP"},
			"NAME    NODE     IMAGES                   MISSING\ndb-0    node-1   registry.example/app:1   <none>\nweb-0   node-1   registry.example/app:1   <none>\nweb-1   node-2   registry.example/app:1   <none>\ndns-0   node-2   registry.example/app:1   <none>\njob-7   <none>   registry.example/app:1   <none>\n"},
		{"custom-columns no headers", []string{"get", "pod", "web-1", "--no-headers", "-o", "custom-columns=N:metadata.name,L:metadata.labels.app"}, "web-1   web\n"},
		{"jsonpath-as-json", []string{"get", "pods", "-o", "jsonpath-as-json={.items[*].metadata.name}"}, "[\n    \"db-0\",\n    \"web-0\",\n    \"web-1\"\n]\n"},
		{"ignore-not-found", []string{"get", "pods", "nope", "--ignore-not-found"}, ""},
		{"ignore-not-found keeps found", []string{"get", "pods", "nope", "web-0", "--ignore-not-found", "-o", "name"}, "pod/web-0\n"},
		{"sort by spec", []string{"get", "pods", "-A", "--sort-by", "spec.nodeName", "-o", "name"}, "pod/job-7\npod/db-0\npod/web-0\npod/web-1\npod/dns-0\n"},
		{"TYPE/NAME", []string{"get", "pod/web-1", "cm/app-config", "-o", "name"}, "pod/web-1\nconfigmap/app-config\n"},
		{"several names", []string{"get", "pods", "web-1", "db-0", "-o", "name"}, "pod/web-1\npod/db-0\n"},
		{"group/version/resource", []string{"get", "core/v1/pods", "-n", "kube-system", "-o", "name"}, "pod/dns-0\n"},
		{"version/resource", []string{"get", "v1/configmaps", "-n", "kube-system", "-o", "name"}, "configmap/coredns\n"},
		{"group/version/resource of a CRD", []string{"get", "example.com/v1/widgets", "-A", "-o", "name"}, "widget.example.com/sprocket\nwidget.example.com/cog\n"},
		{"kind", []string{"get", "Widget", "-n", "team-a", "-o", "name"}, "widget.example.com/cog\n"},
		{"resource.version.group", []string{"get", "widgets.v1.example.com", "-n", "team-a", "-o", "name"}, "widget.example.com/cog\n"},
		{"store name", []string{"get", "example.com/v1/Gadget", "-o", "name"}, "gadget.example.com/gizmo\n"},
		{"cluster-scoped ignores -n", []string{"get", "gadgets", "-n", "kube-system", "-o", "name"}, "gadget.example.com/gizmo\n"},
		{"show secrets", []string{"get", "secret", "db-password", "-o", "jsonpath={.data.password}", "--show-secrets"}, "aHVudGVyMg=="},
		{"secrets redacted", []string{"get", "secret", "db-password", "-o", "jsonpath={.data.password}"}, "REDACTED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := cachectl(t, append(tc.args, db)...).ok(t)
			if r.stdout != tc.want {
				t.Errorf("got:\n%q\nwant:\n%q", r.stdout, tc.want)
			}
		})
	}
}

func TestGetNothingFound(t *testing.T) {
	r := cachectl(t, "get", "pods", "-n", "nowhere", "--db", fixtureFile)
	if r.code != 0 || r.stdout != "" || r.stderr != "No resources found in nowhere namespace.\n" {
		t.Fatalf("%+v", r)
	}
	r = cachectl(t, "get", "pods", "-A", "-l", "app=none", "--db", fixtureFile)
	if r.code != 0 || r.stdout != "" || r.stderr != "No resources found\n" {
		t.Fatalf("%+v", r)
	}
}

func TestGetErrors(t *testing.T) {
	db := "--db=" + fixtureFile
	for _, tc := range []struct {
		name  string
		args  []string
		code  int
		parts []string
	}{
		{"unknown resource", []string{"get", "deployments"}, 1, []string{`no resource type "deployments"`, "it caches: configmaps, gadgets.example.com, pods, secrets, widgets.example.com"}},
		{"missing name", []string{"get", "pods", "web-0", "nope"}, 1, []string{`pods "nope" not found in namespace "default"`}},
		{"bad label selector", []string{"get", "pods", "-l", "app in (web"}, 1, []string{`label selector "app in (web"`}},
		{"bad field selector", []string{"get", "pods", "--field-selector", "spec.nodeName"}, 1, []string{`field selector "spec.nodeName"`}},
		{"unsupported field label", []string{"get", "cm", "--field-selector", "spec.nodeName=a"}, 1, []string{"field label not supported: spec.nodeName"}},
		{"unknown index", []string{"get", "pods", "--index", "zone=a"}, 1, []string{`no index "zone"`, "indexes: namespace, node"}},
		{"bad index", []string{"get", "pods", "--index", "zone"}, 1, []string{"NAME=VALUE"}},
		{"unknown output", []string{"get", "pods", "-o", "xml"}, 1, []string{`unknown output format "xml"`}},
		{"bad jsonpath", []string{"get", "pods", "-o", "jsonpath={.items[}"}, 1, []string{"-o jsonpath"}},
		{"bad sort-by", []string{"get", "pods", "--sort-by", "{.a["}, 1, []string{"--sort-by"}},
		{"name across namespaces", []string{"get", "pods", "web-0", "-A"}, 1, []string{"across all namespaces"}},
		{"no resource", []string{"get"}, 1, []string{"want a resource type"}},
		{"bad custom-columns", []string{"get", "pods", "-o", "custom-columns=NAME"}, 1, []string{"expected <header>:<json-path-expr>"}},
		{"empty custom-columns", []string{"get", "pods", "-o", "custom-columns="}, 1, []string{"no custom columns given"}},
		{"missing custom-columns-file", []string{"get", "pods", "-o", "custom-columns-file=/nonexistent"}, 1, []string{"custom-columns-file"}},
		{"watch events without watch", []string{"get", "pods", "--output-watch-events"}, 1, []string{"only be used with --watch"}},
		{"watch two types", []string{"get", "pods,cm", "-w"}, 1, []string{"one resource type"}},
		{"watch with index", []string{"get", "pods", "-w", "--index", "node=a"}, 1, []string{"--index cannot be used with --watch"}},
		{"negative stale-after", []string{"get", "pods", "--stale-after=-1s"}, 1, []string{"--stale-after"}},
		{"no source", []string{"get", "pods", "--db="}, 1, []string{"--db PATH or --socket PATH is required"}},

		{"both sources", []string{"get", "pods", "--socket", "/x"}, 1, []string{"mutually exclusive"}},
		{"unknown flag", []string{"get", "pods", "--colour"}, 1, []string{"unknown flag: --colour", "cachectl get --help"}},
		{"unknown store", []string{"get", "pods", "--store", "nope"}, 1, []string{`no store named "nope"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{}, tc.args...)
			if tc.name != "no source" {
				args = append(args, db)
			}
			cachectl(t, args...).failed(t, tc.code, tc.parts...)
		})
	}
}

// TestGetNotFoundNamesTheNamespace: a missing object of a namespaced
// resource is named with the namespace read, as kubectl logs names it, so
// that "-namespace team-a" (one dash: -n amespace) shows its mistake; a
// cluster-scoped one has no namespace to name.
func TestGetNotFoundNamesTheNamespace(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		// As in kubectl, "demo" is then a second name.
		{[]string{"get", "pods", "web-0", "-namespace", "demo"}, `error: pods "web-0" not found in namespace "amespace"; pods "demo" not found in namespace "amespace"` + "\n"},
		{[]string{"get", "pods", "web-0", "gone"}, `error: pods "gone" not found in namespace "default"` + "\n"},
		{[]string{"get", "gadgets.example.com", "nope", "-n", "team-a"}, `error: gadgets.example.com "nope" not found` + "\n"},
	} {
		r := cachectl(t, append(tc.args, "--db", fixtureFile)...)
		if r.code != 1 || r.stderr != tc.want {
			t.Errorf("%v: exit %d, stderr %q; want 1 and %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
}

// TestGetLarge reads the 20k-Pod file through every path: full scan,
// namespace index, stored index, name.
func TestGetLarge(t *testing.T) {
	before := testutil.StatFile(t, largeFile)
	db := "--db=" + largeFile
	lines := func(s string) int { return strings.Count(s, "\n") }
	if r := cachectl(t, "get", "pods", "-A", "--no-headers", db).ok(t); lines(r.stdout) != largeObjects {
		t.Errorf("-A: %d lines", lines(r.stdout))
	}
	if r := cachectl(t, "get", "pods", "-n", "ns-3", "-o", "name", db).ok(t); lines(r.stdout) != largeObjects/10 {
		t.Errorf("-n ns-3: %d lines", lines(r.stdout))
	}
	want := 0
	for j := 0; j < largeObjects; j++ {
		if j%50 == 7 && j%7 == 3 {
			want++
		}
	}
	if r := cachectl(t, "get", "pods", "-A", "--index", "node=node-07", "-l", "app=app-3", "-o", "name", db).ok(t); lines(r.stdout) != want {
		t.Errorf("index and selector: %d lines, want %d", lines(r.stdout), want)
	}
	if r := cachectl(t, "get", "pod", "pod-12345", "-n", "ns-5", "-o", "jsonpath={.spec.nodeName}", db).ok(t); r.stdout != "node-45" {
		t.Errorf("by name: %q", r.stdout)
	}
	testutil.Unchanged(t, largeFile, before)
}
