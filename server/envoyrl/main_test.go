package envoyrl_test

import (
	"testing"

	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }
