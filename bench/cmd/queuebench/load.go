package main

import (
	"math"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of /proc CPU times (100 on Linux).
const clockTicks = 100

// cpuSample is a snapshot of the machine's busy CPU time and of the CPU
// time of this program and the processes it started, so that the CPU other
// programs used in between can be told apart: on a shared machine it skews
// the figures.
type cpuSample struct {
	at      time.Time
	machine int64 // user+nice+system+steal of all CPUs, ticks
	own     int64 // this process and its children, ticks
	ok      bool
}

func sampleCPU() cpuSample {
	s := cpuSample{at: time.Now()}
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return s
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return s
	}
	for _, i := range []int{1, 2, 3, 8} { // user nice system steal
		n, _ := strconv.ParseInt(f[i], 10, 64)
		s.machine += n
	}
	// This process with the children it has waited for (node), plus the
	// redis-servers still running.
	self, ok := procTicks("self", true)
	if !ok {
		return s
	}
	s.own = self
	started.Lock()
	for _, srv := range started.servers {
		if t, ok := procTicks(strconv.Itoa(srv.cmd.Process.Pid), false); ok {
			s.own += t
		}
	}
	started.Unlock()
	s.ok = true
	return s
}

// procTicks reads utime+stime (and with children, cutime+cstime) of a process.
func procTicks(pid string, children bool) (int64, bool) {
	data, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); utime is field 14, so f[11].
	if len(f) < 15 {
		return 0, false
	}
	last := 12
	if children {
		last = 14
	}
	var t int64
	for k := 11; k <= last; k++ {
		n, _ := strconv.ParseInt(f[k], 10, 64)
		t += n
	}
	return t, true
}

// otherLoad returns the CPU, in cores, that other programs used between a
// and b (NaN when unknown). A server that stopped in between makes it
// unreliable; the runs here do not stop servers.
func otherLoad(a, b cpuSample) float64 {
	if !a.ok || !b.ok {
		return math.NaN()
	}
	secs := b.at.Sub(a.at).Seconds()
	if secs <= 0 {
		return math.NaN()
	}
	other := float64((b.machine-a.machine)-(b.own-a.own)) / clockTicks / secs
	return max(other, 0)
}
