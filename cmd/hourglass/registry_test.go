package main

import (
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/hourglass-io/hourglass"
)

// backendStores are the fields of hourglass.Backend that hold a
// primitive's store: every field of an interface type but the Redis
// client.
func backendStores() []string {
	var out []string
	bt := reflect.TypeFor[hourglass.Backend]()
	for i := range bt.NumField() {
		f := bt.Field(i)
		if f.IsExported() && f.Type.Kind() == reflect.Interface && f.Name != "Redis" {
			out = append(out, f.Name)
		}
	}
	return out
}

// commandMisses returns what the stores miss of the CLI's registries: a
// line in byStore with at least one command, each of them in cmds; and
// what cmds miss: each command in one line of byStore or in storeless,
// never in two.
func commandMisses(stores []string, byStore map[string][]*command, cmds []*command) []string {
	var misses []string
	for _, c := range cmds {
		var in []string
		for _, s := range slices.Sorted(maps.Keys(byStore)) {
			if slices.Contains(byStore[s], c) {
				in = append(in, s)
			}
		}
		if slices.Contains(storelessCommands, c) {
			in = append(in, "storelessCommands")
		}
		switch {
		case len(in) == 0:
			misses = append(misses, "the command "+c.name+" is in no line of storeCommands nor in storelessCommands")
		case len(in) > 1:
			misses = append(misses, "the command "+c.name+" is in "+strings.Join(in, " and "))
		}
	}
	for _, c := range storelessCommands {
		if !slices.Contains(cmds, c) {
			misses = append(misses, "the storeless command "+c.name+" is not in commands")
		}
	}
	for _, s := range stores {
		if len(byStore[s]) == 0 {
			misses = append(misses, "the store "+s+" has no command (storeCommands)")
		}
	}
	for _, s := range slices.Sorted(maps.Keys(byStore)) {
		if !slices.Contains(stores, s) {
			misses = append(misses, "storeCommands names "+s+", no store of a Backend")
		}
		for _, c := range byStore[s] {
			if !slices.Contains(cmds, c) {
				misses = append(misses, "the command "+c.name+" of "+s+" is not in commands")
			}
		}
	}
	return misses
}

// tallyCommand is what the test-only primitive internal/tally adds to the
// CLI (CONTRIBUTING.md's worked example): a command in commands and its
// line in storeCommands. A real primitive's is in cmd/hourglass/<name>.go,
// with its flags and the function that runs it; the tally has no store in
// a Backend to run against, so this one has none and is never run.
var tallyCommand = &command{
	name:    "tally",
	forms:   []string{"get NAME"},
	summary: "read a tally",
}

// The CLI's registries, as they are and with the test-only primitive
// added as if its store were a field "Tallies" of hourglass.Backend:
// every store has a command listed in storeCommands, and each is in
// commands; every command is in storeCommands or storelessCommands.
// Leaving the tally's line out of storeCommands, or its command out of
// commands, fails here.
func TestRegistries(t *testing.T) {
	for _, miss := range commandMisses(backendStores(), storeCommands, commands) {
		t.Error(miss)
	}
	stores := append(backendStores(), "Tallies")
	byStore := maps.Clone(storeCommands)
	byStore["Tallies"] = []*command{tallyCommand}
	cmds := append(slices.Clone(commands), tallyCommand)
	for _, miss := range commandMisses(stores, byStore, cmds) {
		t.Error("with the tally:", miss)
	}
}
