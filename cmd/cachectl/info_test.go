package main

import (
	"encoding/json"
	"testing"

	"github.com/boltinformer/boltinformer/internal/admin"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

func TestInfoGolden(t *testing.T) {
	before := testutil.StatFile(t, fixtureFile)
	r := cachectl(t, "info", "--db", fixtureFile).ok(t)
	golden(t, "info", normalizePath(r.stdout, fixtureFile))
	r = cachectl(t, "info", "-o", "wide", "--db", fixtureFile).ok(t)
	golden(t, "info_wide", normalizePath(r.stdout, fixtureFile))
	r = cachectl(t, "info", "-o", "yaml", "--db", fixtureFile).ok(t)
	golden(t, "info_yaml", normalizePath(r.stdout, fixtureFile))
	testutil.Unchanged(t, fixtureFile, before)
}

func TestInfoLarge(t *testing.T) {
	r := cachectl(t, "info", "-o", "json", "--db", largeFile).ok(t)
	var info admin.Info
	if err := json.Unmarshal([]byte(r.stdout), &info); err != nil {
		t.Fatal(err)
	}
	if len(info.Stores) != 1 {
		t.Fatalf("stores: %+v", info.Stores)
	}
	s := info.Stores[0]
	if s.Objects != largeObjects || s.Indexes["namespace"] != 10 || s.Indexes["node"] != 50 || s.ResourceVersion != "20999" || s.Identity.Kind != "Pod" {
		t.Fatalf("store: %+v", s)
	}
}

func TestInfoErrors(t *testing.T) {
	cachectl(t, "info", "-o", "table", "--db", fixtureFile).failed(t, 1, `unknown output format "table"`)
	cachectl(t, "info", "extra", "--db", fixtureFile).failed(t, 1, "info takes no arguments")
}
