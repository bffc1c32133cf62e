//go:build linux

package redistest

import "syscall"

// sysProcAttr puts the server in its own process group, so a terminal
// interrupt aimed at the test binary does not hit it before our cleanup runs,
// and asks the kernel to SIGKILL it if the test binary dies without cleaning
// up (for example on a test timeout).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
