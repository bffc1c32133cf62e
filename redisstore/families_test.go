package redisstore

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hourglass-io/hourglass/internal/errscan"
)

// Every file of scripts/ is a registered family's helper file or a
// registered operation of the family its prefix names, and every
// operation's file is there.
func TestEveryScriptInARegisteredFamily(t *testing.T) {
	entries, err := scriptFS.ReadDir("scripts")
	if err != nil {
		t.Fatal(err)
	}
	helperFiles := map[string]bool{sharedHelpers: true}
	for _, f := range families {
		helperFiles[f.helpers.file] = true
	}
	seen := map[string]bool{}
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".lua")
		if !ok {
			continue
		}
		seen[name] = true
		if helperFiles[name] {
			continue
		}
		o, ok := ops[name]
		if !ok {
			t.Errorf("scripts/%s.lua is no registered operation (operation(%q))", name, name)
			continue
		}
		if !strings.HasPrefix(name, o.family.prefix) || (o.family.prefix == "" && strings.Contains(name, "_")) {
			t.Errorf("scripts/%s.lua is in the family %q, prefix %q", name, o.family.name, o.family.prefix)
		}
	}
	for name := range ops {
		if !seen[name] {
			t.Errorf("operation %q has no file scripts/%s.lua", name, name)
		}
	}
	for h := range helperFiles {
		if !seen[h] {
			t.Errorf("helper file scripts/%s.lua is missing", h)
		}
	}
}

// An operation file whose prefix no family registers stops the package
// instead of running with the queue's helpers.
func TestUnknownPrefixPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("familyOf(\"zz_op\") did not panic")
		}
	}()
	familyOf("zz_op")
}

// Every ErrClosed, ErrFull and ErrNotReplicated that a family's package
// declares (read from its errors.go) is what the family's error table
// turns the runner's matching failure into; and every table maps a closed
// store to some error.
func TestErrTablesMapEverySentinel(t *testing.T) {
	for _, f := range families {
		declared := sentinels(t, filepath.Join("..", f.pkg, "errors.go"))
		if f.errs.closed == nil {
			t.Errorf("%s: no error for a closed store", f.name)
		}
		for _, c := range []struct {
			name   string
			mapped error
			runner error
		}{
			{"ErrClosed", f.errs.closed, errStoreClosed},
			{"ErrFull", f.errs.full, errOOM},
			{"ErrNotReplicated", f.errs.notReplicated, errNotReplicated},
		} {
			msg, ok := declared[c.name]
			if !ok {
				continue
			}
			if c.mapped == nil || c.mapped.Error() != msg {
				t.Errorf("%s: %s.%s (%q) is not in the error table (got %v)", f.name, f.pkg, c.name, msg, c.mapped)
				continue
			}
			if got := f.errs.mapErr(fmt.Errorf("call: %w", c.runner)); !errors.Is(got, c.mapped) {
				t.Errorf("%s: the runner's %v maps to %v, want %s.%s", f.name, c.runner, got, f.pkg, c.name)
			}
		}
	}
}

// sentinels returns the messages of the errors.New variables of a Go
// file, by name.
func sentinels(t *testing.T, path string) map[string]string {
	t.Helper()
	out, err := errscan.Sentinels(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("%s declares no sentinel errors", path)
	}
	return out
}
