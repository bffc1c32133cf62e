//go:build linux

package beanstalk_test

import "syscall"

// refProcAttr has the kernel kill the reference beanstalkd if the test
// binary dies without cleaning up (a test timeout, say).
func refProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
