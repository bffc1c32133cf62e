//go:build unix

package main

import (
	"os"
	"syscall"
)

// drainSignals put serve in drain mode.
var drainSignals = []os.Signal{syscall.SIGUSR1}
