// Package tmpfstest gives tests a small file system of their own that can
// be filled up: a size-limited tmpfs mounted for the test (which needs
// root on Linux), and a filler that takes its free space and gives it back.
package tmpfstest

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Filler takes the free space of a file system and gives it back.
type Filler struct {
	path string
}

// Fill writes a file in dir until the file system has no space left, and
// returns it so that Free can remove it.
func Fill(t testing.TB, dir string) *Filler {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatalf("fill %s: %v", dir, err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for len(buf) > 0 {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill %s: %v", dir, err)
			}
			buf = buf[:len(buf)/2] // the last pages
		}
	}
	return &Filler{path: path}
}

// Free removes the filler, giving its space back.
func (f *Filler) Free(t testing.TB) {
	t.Helper()
	if err := os.Remove(f.path); err != nil {
		t.Fatalf("free: %v", err)
	}
}
