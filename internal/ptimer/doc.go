// Package ptimer is a timer that calls a function at its time to within
// tens of microseconds, where time.AfterFunc can be up to a millisecond
// late.
//
// Go's runtime waits for its timers, when nothing else runs, in
// epoll_wait with a timeout in whole milliseconds, so a timer due in
// 3.4 ms fires after 4 ms or more: about half a millisecond late on
// average and a millisecond at worst, before any scheduling delay. On
// Linux a Timer is a timerfd read through the runtime's network poller,
// so the kernel's high-resolution timer wakes the reading goroutine at the
// deadline. Elsewhere it is time.AfterFunc.
//
// The runtime reads its poller when a thread has nothing to run, and
// otherwise only now and then (every 10 ms at worst), while it looks at
// its own timers at every scheduling point. So when every thread of the
// process is busy a timerfd's expiry can wait where a runtime timer would
// not: a Timer also sets a runtime timer for the same time, and whichever
// fires first calls the function and disarms the other.
//
// A Timer calls its function one call at a time; the goroutine that reads
// the timerfd lives from the first Reset until Stop or Close.
package ptimer
