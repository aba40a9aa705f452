package e2e

import (
	"context"
	"fmt"
	"maps"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	bolt "go.etcd.io/bbolt"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/testcluster"
	"github.com/boltinformer/boltinformer/internal/testutil"
	"github.com/boltinformer/boltinformer/migrations"
	"github.com/boltinformer/boltinformer/migrations/migrationstest"
)

// upgradeObjects is the ConfigMaps of the upgrade test: enough that its
// migration takes long enough to be killed in the middle.
const upgradeObjects = 2000

// migratingLine is what the upgrade child prints when Open starts to
// migrate its file.
const migratingLine = "migrating"

// upgradeChild is crashChild for a file of an older schema: it prints
// testutil.ReadyLine before Open, and migratingLine as soon as Open logs
// that it migrates the file, so that the test can kill it in the middle
// of the migration.
func upgradeChild() int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "upgrade child:", err)
		return 3
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv(envKubeconfig))
	if err != nil {
		return fail(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fail(err)
	}
	fmt.Println(testutil.ReadyLine)
	logger := funcr.New(func(_, args string) {
		if strings.Contains(args, "migrating it in place") {
			fmt.Println(migratingLine)
		}
		fmt.Fprintln(os.Stderr, args)
	}, funcr.Options{})
	c, err := boltinformer.Open(os.Getenv(envDB), boltinformer.Options{Logger: logger})
	if err != nil {
		return fail(err)
	}
	ns := os.Getenv(envNamespace)
	opts := crashOptions("auto")
	opts.Namespace, opts.Resource = ns, "configmaps"
	inf, err := c.NewInformer(cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "configmaps", ns, fields.Everything()), &v1.ConfigMap{}, opts)
	if err != nil {
		return fail(err)
	}
	inf.RunWithContext(context.Background()) // until SIGKILL
	return 0
}

// apiserverCost is what the apiserver served for one resource: its LIST
// requests and the bytes it sent, as its own metrics count them (the
// bodies of every response but a WATCH's, whose size is recorded only when
// it ends, and the objects of every watch event). The e2e tests run one at
// a time, so a difference over a step is the step's.
type apiserverCost struct{ lists, bytes float64 }

func readCost(t *testing.T, c *testcluster.Cluster, resource string) apiserverCost {
	t.Helper()
	ctx := testutil.Context(t)
	sum := func(name string, labels map[string]string) float64 {
		v, err := c.HistogramSum(ctx, name, labels)
		if err != nil {
			t.Fatalf("read %s: %v", name, err)
		}
		return v
	}
	bodies := sum("apiserver_response_sizes", map[string]string{"resource": resource}) -
		sum("apiserver_response_sizes", map[string]string{"resource": resource, "verb": "WATCH"})
	events := sum("apiserver_watch_events_sizes", map[string]string{"resource": resource})
	return apiserverCost{lists: requestCount(t, c, "LIST", resource), bytes: bodies + events}
}

func (a apiserverCost) minus(b apiserverCost) apiserverCost {
	return apiserverCost{lists: a.lists - b.lists, bytes: a.bytes - b.bytes}
}

func (a apiserverCost) String() string {
	return fmt.Sprintf("%.0f LIST requests, %.1f KiB sent", a.lists, a.bytes/1024)
}

// storeRVs opens store name of the closed current-schema file at path
// read-only and returns its RV and its keys' RVs.
func storeRVs(t *testing.T, path string) (string, map[string]string) {
	t.Helper()
	st := openReadOnly(t, path, "ConfigMap.v1", &v1.ConfigMap{})
	defer st.Close()
	rv, err := st.ResourceVersion()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, o := range st.List() {
		cm := o.(*v1.ConfigMap)
		out[cm.Namespace+"/"+cm.Name] = cm.ResourceVersion
	}
	return rv, out
}

// TestUpgradeDuringChurn takes a file of the ConfigMaps of a namespace
// back to the schema before this build's (as the last release left it)
// and starts this build on it in a child process while the ConfigMaps
// change, killing it with SIGKILL once Open has begun to migrate, three
// times, each on the older file. After each kill the file is the complete
// older file, or a migrated one that passes its checks and holds exactly
// what the apiserver held at its stored RV. The start after the last kill
// migrates what is left and resumes from the stored RV: no LIST but the
// resume check, and it converges with the apiserver. The test logs what
// that upgrade cost the apiserver against the cold start it spared.
func TestUpgradeDuringChurn(t *testing.T) {
	c := sharedCluster(t)
	cl := newClient(t, c)
	ns := newNamespace(t, cl, "e2e-upgrade")
	existing := createConfigMaps(t, cl, ns, 0, upgradeObjects)
	dir := t.TempDir()
	kubeconfig, path := testutil.WriteKubeconfig(t, c.Config()), filepath.Join(dir, "cache.db")

	// The file as a build of the schema before this one left it. Paged
	// LISTs, not a WatchList: the cost of a relist is then counted in LIST
	// requests.
	opts := crashOptions("off")
	rc := startCache(t, cl, path, ns, configMapSpec(opts))
	rc.stop()
	rv, want := storeRVs(t, path)
	from := cachefile.Version - 1
	if _, err := migrations.Migrate(path, migrations.Options{Target: &from, NoSync: true}); err != nil {
		t.Fatal(err)
	}
	older := filepath.Join(dir, "older.db")
	testutil.CopyFile(t, path, older)
	olderDump := migrationstest.Dump(t, older)
	t.Logf("schema v%d file of %d ConfigMaps at RV %s", from, len(want), rv)

	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewSource(seed))
	ch := startChurn(cl, ns, existing, upgradeObjects+200, 3, seed)
	defer ch.stop()
	// The last kill comes first thing, so that the next start most likely
	// finds the older file and migrates it.
	for kill, delay := range []time.Duration{time.Duration(100+r.Intn(200)) * time.Millisecond, time.Duration(r.Intn(40)) * time.Millisecond, 0} {
		testutil.CopyFile(t, older, path)
		child := testutil.StartChild(t, "upgrade", envKubeconfig+"="+kubeconfig, envDB+"="+path, envNamespace+"="+ns)
		child.Await(time.Minute, migratingLine)
		child.KillAfter(delay) // when to kill: random, not an assertion
		switch v := migrationstest.SchemaVersion(t, path); v {
		case from:
			if d := migrationstest.DiffDumps(olderDump, migrationstest.Dump(t, path)); d != "" {
				t.Fatalf("kill %d (%v after the migration began): the v%d file is not the one it was:\n%s", kill, delay, v, d)
			}
			t.Logf("kill %d (%v after the migration began): the file is still v%d, complete", kill, delay, v)
		case cachefile.Version:
			// Migrated; the informer may have applied events since.
			checkKilledFile(t, cl, path, ns, fmt.Sprintf("kill %d (%v after the migration began): migrated", kill, delay))
			if gotRV, got := storeRVs(t, path); gotRV == rv && !maps.Equal(got, want) {
				t.Fatalf("kill %d: the migrated file at the older file's RV %s holds other objects", kill, rv)
			}
		default:
			t.Fatalf("kill %d: the file is v%d", kill, v)
		}
	}

	// The next start: the migration is finished (or was), and the
	// informer resumes during the churn.
	left := migrationstest.SchemaVersion(t, path)
	before := readCost(t, c, "configmaps")
	rc = startCacheWith(t, cl, path, ns, boltinformer.Options{}, configMapSpec(opts))
	ri := rc.infs[0]
	if ri.startRV == "" {
		t.Fatal("the store has no RV after the upgrade")
	}
	upgrade := readCost(t, c, "configmaps").minus(before)
	if calls := ri.lw.Calls(); ri.lw.count(call.isRelist) != 0 || upgrade.lists != float64(ri.lw.count(call.isResumeCheck)) {
		t.Fatalf("the upgraded informer relisted: %v (apiserver counted %v LISTs)", calls, upgrade.lists)
	}
	ops, err := ch.stop()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the churn made %d changes", ops)
	current := listObjects(t, cl, "configmaps", ns, metav1.ListOptions{})
	testutil.EventuallyDiff(t, "the upgraded informer to converge", convergeTimeout, func() string {
		return diffRVs(rvs(current), rvs(storeObjects(ri.Informer)))
	})
	assertSameObjects(t, "cache vs LIST", current, storeObjects(ri.Informer))
	rc.stop()
	if v := migrationstest.SchemaVersion(t, path); v != cachefile.Version {
		t.Fatalf("the file is v%d after the upgrade", v)
	}

	// What the upgrade spared: a cold start of the same namespace.
	before = readCost(t, c, "configmaps")
	rc = startCache(t, cl, filepath.Join(dir, "cold.db"), ns, configMapSpec(opts))
	cold := readCost(t, c, "configmaps").minus(before)
	rc.stop()
	// The upgrade's bytes are the resumed WATCH's: every change since the
	// stored RV, which the churn decides (no bound is asserted on them).
	t.Logf("apiserver cost of %d ConfigMaps: start on the schema v%d file the last kill left, during churn (%d changes): %v; cold start (pages of %d): %v",
		len(current), left, ops, upgrade, opts.PageSize, cold)
}

// stampSchema makes the closed file at path look written by a build of
// schema version with the given minimums.
func stampSchema(t *testing.T, path string, version, minReader, minWriter uint64) {
	t.Helper()
	b, err := bolt.Open(path, 0o600, &bolt.Options{NoFreelistSync: true, FreelistType: bolt.FreelistMapType, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(cachefile.MetaBucket)
		for k, v := range map[string]uint64{string(cachefile.MetaSchemaVersion): version,
			string(cachefile.MetaMinReaderVersion): minReader, string(cachefile.MetaMinWriterVersion): minWriter} {
			if err := meta.Put([]byte(k), []byte(strconv.FormatUint(v, 10))); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestCachectlSyncRollback runs `cachectl sync` on a file that a newer
// build left, as a rollback of a fleet would: a file whose changes this
// build may ignore (its minimum writer is this build's schema) is resumed
// from, with no LIST but the resume check, and keeps its schema; a file
// this build cannot write is set aside as NAME.newer-vN-TIMESTAMP and
// rebuilt by a relist; sync never exits. The test logs what each rollback
// cost the apiserver.
func TestCachectlSyncRollback(t *testing.T) {
	c := sharedCluster(t)
	cl := newClient(t, c)
	ns := newNamespace(t, cl, "e2e-rollback")
	cms := createConfigMaps(t, cl, ns, 0, 500)
	dir := t.TempDir()
	bin := buildCachectl(t, dir)
	kubeconfig, db, sock := testutil.WriteKubeconfig(t, c.Config()), filepath.Join(dir, "cache.db"), filepath.Join(dir, "sync.sock")
	args := []string{"--kubeconfig", kubeconfig, "--db", db, "--resource", "configmaps", "-n", ns, "--socket", sock}
	// converged compares with a LIST made before the step, so that the
	// apiserver's counts over the step are cachectl's alone.
	converged := func(want map[string]runtime.Object) func() string {
		return func() string { return diffRVs(rvs(want), rvs(cachectlGet(t, bin, "configmaps", "--socket", sock))) }
	}
	stop := func(p *syncProcess) {
		t.Helper()
		if code := p.signal(syscall.SIGTERM); code != 0 {
			t.Fatalf("cachectl sync exited %d on SIGTERM:\n%s", code, tail(p.stderr.String()))
		}
	}

	first := startCachectlSync(t, bin, args...)
	first.awaitStderr(t, "configmaps: synced")
	stop(first)

	for _, tc := range []struct {
		name                          string
		version, minReader, minWriter uint64
		setAside                      bool
	}{
		{"a newer file this build may write", cachefile.Version + 1, cachefile.Version, cachefile.Version, false},
		{"a newer file this build cannot write", cachefile.Version + 2, cachefile.Version + 2, cachefile.Version + 2, true},
	} {
		stampSchema(t, db, tc.version, tc.minReader, tc.minWriter)
		m := newMutation()
		for i := 0; i < 5; i++ {
			cms[ns+"/"+cmName(i)] = m.update(t, cl, cms[ns+"/"+cmName(i)], "rollback-"+strconv.FormatUint(tc.version, 10))
		}
		want := listObjects(t, cl, "configmaps", ns, metav1.ListOptions{})
		before := readCost(t, c, "configmaps")
		p := startCachectlSync(t, bin, args...)
		if tc.setAside {
			p.awaitStderr(t, "configmaps: relisting: the cache file has no resourceVersion", "configmaps: synced")
		} else {
			p.awaitStderr(t, "configmaps: resuming watch at resourceVersion", "configmaps: synced")
		}
		testutil.EventuallyDiff(t, tc.name+": cachectl sync to converge", convergeTimeout, converged(want))
		cost := readCost(t, c, "configmaps").minus(before)
		stop(p)
		moved, err := filepath.Glob(db + ".newer-v*")
		if err != nil {
			t.Fatal(err)
		}
		v := migrationstest.SchemaVersion(t, db)
		switch {
		case tc.setAside && (len(moved) != 1 || !strings.HasPrefix(moved[0], fmt.Sprintf("%s.newer-v%d-", db, tc.version)) || v != cachefile.Version):
			t.Fatalf("%s: set aside %v, the file is v%d; want one %s.newer-v%d-* and a new v%d file", tc.name, moved, v, db, tc.version, cachefile.Version)
		case !tc.setAside && (len(moved) != 0 || v != tc.version || cost.lists != 1):
			t.Fatalf("%s: set aside %v, the file is v%d, %v; want it kept at v%d and only the resume check", tc.name, moved, v, cost, tc.version)
		}
		// cachectl sync relists through a WatchList stream, which is no
		// LIST request: its cost is in the bytes.
		t.Logf("%s (schema v%d, readable from v%d, writable from v%d): apiserver cost %v", tc.name, tc.version, tc.minReader, tc.minWriter, cost)
	}
	cachectl(t, bin, "check", "--db", db)
	assertSameObjects(t, "cachectl get --db vs LIST", listObjects(t, cl, "configmaps", ns, metav1.ListOptions{}), cachectlGet(t, bin, "configmaps", "--db", db))
}
