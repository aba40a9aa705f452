package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/boltinformer/boltinformer/internal/admin/admintest"
	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// TestGetWarnsStale: a store last written longer ago than --stale-after
// (10m by default) gets a warning on stderr; the output is unchanged.
func TestGetWarnsStale(t *testing.T) {
	later := runOpts{now: admintest.Now.Add(3 * time.Hour)}
	fresh := cachectl(t, "get", "cm", "-o", "name", "--db", fixtureFile).ok(t)
	r := cachectlWith(t, later, "get", "cm", "-o", "name", "--db", fixtureFile)
	want := "Warning: store v1/ConfigMap was last written 3h ago (resourceVersion 202), longer than --stale-after=10m0s: its objects may be out of date\n"
	if r.code != 0 || r.stderr != want || r.stdout != fresh.stdout {
		t.Errorf("%+v", r)
	}
	for _, flag := range []string{"--stale-after=0", "--stale-after=4h"} {
		if r := cachectlWith(t, later, "get", "cm", "-o", "name", flag, "--db", fixtureFile); r.stderr != "" || r.code != 0 {
			t.Errorf("%s: %+v", flag, r)
		}
	}
	// Every resource asked for is checked.
	r = cachectlWith(t, later, "get", "pods,cm", "--stale-after=90m", "--db", fixtureFile)
	if strings.Count(r.stderr, "Warning: store ") != 2 || !strings.Contains(r.stderr, "store v1/Pod was last written 3h ago") {
		t.Errorf("two stores: %q", r.stderr)
	}
}

// TestGetWarnsScopeAndRelist: a store that caches only namespace churn
// warns for -n default and -A (not for its own namespace, the default);
// a store in the middle of a relist says how far it got; a store never
// synced says so.
func TestGetWarnsScopeAndRelist(t *testing.T) {
	path := filepath.Join(t.TempDir(), "scope.db")
	db, err := cachefile.Open(path, cachefile.Options{NoSync: true, Now: func() time.Time { return admintest.Now }})
	if err != nil {
		t.Fatal(err)
	}
	cms, err := boltstore.New(db, "ConfigMap.v1.churn", boltstore.StoreOptions{Object: &v1.ConfigMap{},
		Identity: &cachefile.Identity{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "churn"}})
	if err != nil {
		t.Fatal(err)
	}
	cm := func(name string) *v1.ConfigMap {
		return &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "churn", Name: name, ResourceVersion: "5", CreationTimestamp: metav1.NewTime(admintest.Epoch)}}
	}
	if _, err := cms.Apply([]boltstore.Op{{Type: boltstore.OpUpsert, Obj: cm("a")}, {Type: boltstore.OpUpsert, Obj: cm("b")}}, "5"); err != nil {
		t.Fatal(err)
	}
	pods, err := boltstore.New(db, "Pod.v1", boltstore.StoreOptions{Object: &v1.Pod{}, Identity: admintest.PodIdentity})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Apply([]boltstore.Op{{Type: boltstore.OpUpsert, Obj: admintest.Pod("a", "p-0", 9, "", v1.PodRunning, 0, nil)}}, "9"); err != nil {
		t.Fatal(err)
	}
	// A relist (after a 410) that has listed 3 Pods of its first page.
	if err := pods.BeginRelist("410 Gone"); err != nil {
		t.Fatal(err)
	}
	var page []boltstore.Op
	for _, p := range []*v1.Pod{admintest.Pod("a", "p-1", 20, "", v1.PodRunning, 0, nil), admintest.Pod("a", "p-2", 21, "", v1.PodRunning, 0, nil),
		admintest.Pod("b", "p-3", 22, "", v1.PodRunning, 0, nil)} {
		page = append(page, boltstore.Op{Type: boltstore.OpUpsert, Obj: p})
	}
	if _, err := pods.ApplyListPage(page); err != nil {
		t.Fatal(err)
	}
	if _, err := boltstore.New(db, "Secret.v1", boltstore.StoreOptions{Object: &v1.Secret{}, Identity: admintest.SecretIdentity}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	before := testutil.StatFile(t, path)
	for _, tc := range []struct {
		args   []string
		stdout string
		stderr string
	}{
		{[]string{"get", "cm", "-o", "name"}, "configmap/a\nconfigmap/b\n", ""},
		{[]string{"get", "cm", "-n", "churn", "-o", "name"}, "configmap/a\nconfigmap/b\n", ""},
		{[]string{"get", "cm", "-n", "default"}, "",
			"Warning: store ConfigMap.v1.churn caches only namespace \"churn\": objects of namespace \"default\" are not in the file\nNo resources found in default namespace.\n"},
		{[]string{"get", "cm", "-A", "-o", "name"}, "configmap/a\nconfigmap/b\n",
			"Warning: store ConfigMap.v1.churn caches only namespace \"churn\": objects of other namespaces are not in the file\n"},
		{[]string{"get", "pods", "-A", "-o", "name"}, "pod/p-0\npod/p-1\npod/p-2\npod/p-3\n",
			"Warning: store Pod.v1 is relisting (410 Gone): 3 object(s) listed so far, 4 stored; objects may be missing or already deleted until it finishes\n"},
		{[]string{"get", "secrets", "-A"}, "", "Warning: store Secret.v1 has never been synced: it holds no list of secrets\nNo resources found\n"},
	} {
		r := cachectl(t, append(tc.args, "--db", path)...)
		if r.code != 0 || r.stdout != tc.stdout || r.stderr != tc.stderr {
			t.Errorf("%v: exit %d\nstdout %q\nwant   %q\nstderr %q\nwant   %q", tc.args, r.code, r.stdout, tc.stdout, r.stderr, tc.stderr)
		}
	}
	testutil.Unchanged(t, path, before)
}
