//go:build !unix

package main

import (
	"os"
	"os/exec"
)

func ownGroup(cmd *exec.Cmd) {}

// terminate asks cmd to stop.
func terminate(cmd *exec.Cmd) {
	cmd.Process.Signal(os.Interrupt)
}

// kill stops cmd at once.
func kill(cmd *exec.Cmd) {
	cmd.Process.Kill()
}
