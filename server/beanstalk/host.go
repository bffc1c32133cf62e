package beanstalk

import "fmt"

// hostInfo is what stats reports about the machine.
type hostInfo struct {
	hostname string // uname nodename
	os       string // uname version
	platform string // uname machine
}

// rusage is the process's CPU time as stats prints it.
type rusage struct {
	user, system string
}

// cpuTime formats seconds and microseconds as beanstalkd does ("%d.%06d").
func cpuTime(sec, usec int64) string { return fmt.Sprintf("%d.%06d", sec, usec) }
