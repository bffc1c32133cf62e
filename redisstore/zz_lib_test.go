package redisstore

import (
	"os"
	"testing"
)

func TestZZLib(t *testing.T) {
	assemble()
	os.WriteFile(os.Getenv("LIBOUT"), []byte(library.source), 0o644)
	t.Log(ops["put"].fn, ops["reserve"].fn, ops["delete"].fn)
}
