package storetest

import (
	"reflect"
	"testing"

	"github.com/heraldhq/herald/store"
)

// Features declares the optional abilities a store promises (the
// interfaces beside store.Store that only some databases have). Run runs a
// group of tests for each: a declared feature the store lacks fails the
// suite, and a feature not declared is skipped with its name, so that a
// missing ability is a decision written in the store's test, never a
// branch the suite takes quietly.
type Features struct {
	// Wakeups: the store is a store.Waker (PostgreSQL's LISTEN/NOTIFY).
	Wakeups bool
	// Peeks: the store is a store.Peeker.
	Peeks bool
	// IndexByUse: the store is a store.UseIndexer (MySQL/MariaDB).
	IndexByUse bool
	// TenantSkipList: the store is a store.TenantSkipLister.
	TenantSkipList bool
	// LogLanes: the store is a store.LogReader.
	LogLanes bool
	// Previews: the store is a store.Previewer.
	Previews bool
}

// RunFeatures runs only the groups of the optional abilities, as f
// declares them (Run runs them too): for a database in a configuration
// that the server Run uses lacks, such as one whose log Herald can read.
func RunFeatures(t *testing.T, open Opener, f Features) { runFeatures(t, open, f) }

// runFeatures runs the group of each optional ability, as f declares it.
func runFeatures(t *testing.T, open Opener, f Features) {
	runFeature(t, open, "Wakeups", f.Wakeups, wakeupTests)
	runFeature(t, open, "Peeks", f.Peeks, []featureTest[store.Peeker]{{"Peek", testPeek}})
	runFeature(t, open, "IndexByUse", f.IndexByUse, indexByUseTests)
	runFeature(t, open, "TenantSkipList", f.TenantSkipList,
		[]featureTest[store.TenantSkipLister]{{"ClaimableTenantsExcept", testClaimableTenantsExcept}})
	runFeature(t, open, "LogLanes", f.LogLanes, logLaneTests)
	runFeature(t, open, "Previews", f.Previews, []featureTest[store.Previewer]{{"Preview", testPreview}})
}

// featureTest is one named check of an optional ability A, which it is
// handed: the one place the suite asks a store for an ability is
// runFeature.
type featureTest[A any] struct {
	name string
	fn   func(t *testing.T, h *harness, ability A)
}

// runFeature runs tests as the group name: skipped when the feature is not
// declared, failed at once when it is and the store lacks A.
func runFeature[A any](t *testing.T, open Opener, name string, declared bool, tests []featureTest[A]) {
	iface := reflect.TypeFor[A]().String()
	t.Run("Feature"+name, func(t *testing.T) {
		if !declared {
			t.Skipf("Features.%s is not declared: the store does not promise %s", name, iface)
		}
		abilityOf[A](t, open(t), name, iface)
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				h := newHarness(t, open)
				tc.fn(t, h, abilityOf[A](t, h.s, name, iface))
			})
		}
	})
}

// abilityOf returns s as an A, or fails t: feature name is declared.
func abilityOf[A any](t *testing.T, s store.Store, name, iface string) A {
	t.Helper()
	a, ok := s.(A)
	if !ok {
		t.Fatalf("[features] Features.%s is declared, but %T is not a %s", name, s, iface)
	}
	return a
}
