//go:build !unix

package main

import "os"

// drainSignals put serve in drain mode; this platform has no SIGUSR1.
var drainSignals []os.Signal
