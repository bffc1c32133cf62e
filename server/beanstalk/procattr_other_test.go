//go:build !linux

package beanstalk_test

import "syscall"

func refProcAttr() *syscall.SysProcAttr { return nil }
