//go:build unix && !linux

package redistest

import "syscall"

// sysProcAttr puts the server in its own process group, so a terminal
// interrupt aimed at the test binary does not hit it before our cleanup runs.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
