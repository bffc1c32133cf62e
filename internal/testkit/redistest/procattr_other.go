//go:build !unix

package redistest

import "syscall"

func sysProcAttr() *syscall.SysProcAttr { return nil }
