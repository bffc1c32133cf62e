//go:build !linux

package wal

import (
	"errors"
	"fmt"
	"os"
)

func allocate(f *os.File, off, n int64) error {
	return fmt.Errorf("reserve space in %s: %w", f.Name(), errors.ErrUnsupported)
}
