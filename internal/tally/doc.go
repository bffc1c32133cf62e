// Package tally is the worked example of CONTRIBUTING.md ("Adding a
// primitive"): the smallest primitive that goes through the registries a
// real one extends (all but the store schemes: it has no field in
// hourglass.Backend). A tally is a named integer that Add moves by a
// signed amount; a name never added to reads 0.
//
// It is used by tests only and is no part of the servers: its store
// contract (Store, here), its conformance suite
// (internal/testkit/storetest/tally.go), its part of the embedded engine
// (memstore/tally_test.go) and its family of Redis functions
// (redisstore/tally_test.go, scripts/ex_*.lua) and its entries in the
// servers' registries (server/httpapi/tally_test.go,
// cmd/hourglass/registry_test.go) are each written the way a real
// primitive writes them, so the recipe is compiled and run with every test
// of those packages and cannot rot. Where a test file cannot extend a
// registry (memstore's table of parts, redisstore's families, the
// servers' tables), the CONTRIBUTING.md walk-through shows the one line a
// real primitive adds instead.
package tally
