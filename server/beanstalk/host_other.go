//go:build !linux

package beanstalk

import "runtime"

func readHostInfo() hostInfo {
	return hostInfo{hostname: hostname(), os: runtime.GOOS, platform: runtime.GOARCH}
}

func readRusage() rusage { return rusage{cpuTime(0, 0), cpuTime(0, 0)} }
