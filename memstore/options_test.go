package memstore

import (
	"errors"
	"testing"

	"github.com/hourglass-io/hourglass/queue"
)

func TestParseFsync(t *testing.T) {
	for _, p := range []FsyncPolicy{FsyncAlways, FsyncEverySec, FsyncNo} {
		got, err := ParseFsync(p.String())
		if err != nil || got != p {
			t.Errorf("ParseFsync(%q) = %v, %v; want %v", p.String(), got, err, p)
		}
	}
	for _, s := range []string{"", "Always", "sometimes", "1"} {
		if _, err := ParseFsync(s); !errors.Is(err, queue.ErrInvalid) {
			t.Errorf("ParseFsync(%q): %v, want ErrInvalid", s, err)
		}
	}
	if got := FsyncPolicy(7).String(); got != "FsyncPolicy(7)" {
		t.Errorf("String of a bad policy = %q", got)
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, o := range []*Options{{Fsync: -1}, {Fsync: 3}, {MaxJobs: -1}, {CompactBytes: -1}} {
		if _, err := Open(t.TempDir(), o); !errors.Is(err, queue.ErrInvalid) {
			t.Errorf("Open with %+v: %v, want ErrInvalid", o, err)
		}
	}
	if s, err := New(&Options{MaxJobs: -1}); !errors.Is(err, queue.ErrInvalid) || s != nil {
		t.Errorf("New with MaxJobs -1: %v, %v; want ErrInvalid", s, err)
	}
}
