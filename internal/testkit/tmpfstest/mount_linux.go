//go:build linux

package tmpfstest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Mount mounts a tmpfs of size bytes on a new directory for the test and
// unmounts it when the test ends. Where no tmpfs can be mounted (not
// Linux, not root, no mount(8)), the test is skipped with a message that
// says why and what the test needs.
func Mount(t testing.TB, size int64) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("SKIPPED: this test fills a size-limited tmpfs, which needs root to mount (running as uid %d)", os.Geteuid())
	}
	dir := filepath.Join(t.TempDir(), "tmpfs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	opts := fmt.Sprintf("size=%d,mode=0700", size)
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, opts); err != nil {
		if errors.Is(err, syscall.EPERM) {
			t.Skipf("SKIPPED: cannot mount a tmpfs here (%v): this test needs a root that may mount (a container without CAP_SYS_ADMIN cannot)", err)
		}
		t.Fatalf("mount tmpfs on %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			// A file still open: detach it, so the test's directory goes.
			if err2 := syscall.Unmount(dir, syscall.MNT_DETACH); err2 != nil {
				t.Errorf("unmount %s: %v", dir, err)
			}
		}
	})
	return dir
}
