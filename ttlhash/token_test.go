package ttlhash_test

import (
	"errors"
	"testing"

	"github.com/hourglass-io/hourglass/ttlhash"
)

func TestCheckEventID(t *testing.T) {
	for _, id := range []string{"1", "17", "0:1700000000000-4", "15:1-0", "3:18446744073709551615-18446744073709551615", "2:5"} {
		if err := ttlhash.CheckEventID(id); err != nil {
			t.Errorf("CheckEventID(%q): %v", id, err)
		}
	}
	for _, id := range []string{"", "x", "0:abc", "1:2-3-4", "1:", ":5", "1:-", "-1", "1:2-", "+1", "1:+2", "18446744073709551616", "1:2:3"} {
		if err := ttlhash.CheckEventID(id); !errors.Is(err, ttlhash.ErrInvalidEventID) {
			t.Errorf("CheckEventID(%q): %v, want ErrInvalidEventID", id, err)
		}
	}
}

func TestCheckCursor(t *testing.T) {
	for _, c := range []string{"", "0", "12345", "k", "kname", "k\xff"} {
		if err := ttlhash.CheckCursor(c); err != nil {
			t.Errorf("CheckCursor(%q): %v", c, err)
		}
	}
	for _, c := range []string{"\xff", "abc", "-1", " 1", "18446744073709551616", "1.5"} {
		if err := ttlhash.CheckCursor(c); !errors.Is(err, ttlhash.ErrInvalid) {
			t.Errorf("CheckCursor(%q): %v, want ErrInvalid", c, err)
		}
	}
}
