//go:build linux

package beanstalk

import "syscall"

func readHostInfo() hostInfo {
	h := hostInfo{hostname: hostname()}
	var u syscall.Utsname
	if syscall.Uname(&u) == nil {
		h.os = utsString(u.Version[:])
		h.platform = utsString(u.Machine[:])
	}
	return h
}

// utsString converts a NUL-terminated uname field.
func utsString(f []int8) string {
	b := make([]byte, 0, len(f))
	for _, c := range f {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return string(b)
}

func readRusage() rusage {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return rusage{cpuTime(0, 0), cpuTime(0, 0)}
	}
	return rusage{
		user:   cpuTime(int64(ru.Utime.Sec), int64(ru.Utime.Usec)),
		system: cpuTime(int64(ru.Stime.Sec), int64(ru.Stime.Usec)),
	}
}
