package envoyrl_test

import (
	"os"
	"testing"

	"github.com/hourglass-io/hourglass/internal/redistest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	redistest.StopShared()
	os.Exit(code)
}
