// Package schemafixture writes cache files of every schema version this
// project has written, as the builds of each version left them, for the
// tests of upgrades and rollbacks (the root package's, test/failpoints',
// test/e2e's) and the fixtures committed in the root package's
// testdata/schema. It writes through package migrations' frozen steps,
// never through boltstore, so a file of an old version holds exactly that
// version's layout.
package schemafixture

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer/internal/testutil"
	"github.com/boltinformer/boltinformer/migrations"
	"github.com/boltinformer/boltinformer/migrations/migrationstest"
)

// Write creates a file of schema version at path holding stores: it writes
// them as a v0 file (migrationstest.WriteV0) and runs package migrations'
// steps up to version, which write each older layout as the builds of that
// version did. now is the time the steps record (created-at, updated-at),
// so the same call gives the same content.
func Write(path string, version uint64, now time.Time, stores ...migrationstest.V0Store) error {
	if err := migrationstest.WriteV0(path, stores...); err != nil {
		return err
	}
	if version == 0 {
		return nil
	}
	if _, err := migrations.Migrate(path, migrations.Options{Target: &version, NoSync: true, Now: func() time.Time { return now }}); err != nil {
		return fmt.Errorf("write a schema v%d file: %w", version, err)
	}
	return nil
}

// The committed fixtures hold the Pods of History() at RV, in the store an
// informer of Pods names by default, with the indexes of Indexers.
const (
	// StoreName is the store of the fixtures (an informer's default for Pods).
	StoreName = "Pod.v1"
	// RV is the resourceVersion the fixtures are current to: History's
	// events above it are what a resumed WATCH must deliver.
	RV = historyInitial + 30
)

// Now is the time the fixtures record.
var Now = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

const (
	historySeed    = 33
	historyInitial = 30
	historyEvents  = 60
	historyKeys    = 45
)

// History is the cluster the fixtures were taken from: historyInitial
// Pods, then adds, updates and deletes.
func History() *testutil.History {
	return testutil.NewHistory(historySeed, historyInitial, historyEvents, historyKeys)
}

// Indexers are the fixtures' indexes: namespace and node.
func Indexers() cache.Indexers {
	return cache.Indexers{
		cache.NamespaceIndex: cache.MetaNamespaceIndexFunc,
		"node":               func(obj any) ([]string, error) { return []string{obj.(*v1.Pod).Spec.NodeName}, nil },
	}
}

// Stores are the stores of a fixture: History's Pods at RV.
func Stores() []migrationstest.V0Store {
	pods := History().ObjectsAt(RV)
	objs := make([]runtime.Object, len(pods))
	for i, p := range pods {
		objs[i] = p
	}
	return []migrationstest.V0Store{{Name: StoreName, RV: fmt.Sprint(RV), Objects: objs, Indexers: Indexers()}}
}
