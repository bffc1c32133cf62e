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
// A Timer runs its function on one goroutine, one call at a time; the
// goroutine lives while the timer is set and ends when it is stopped or
// has fired without being set again.
package ptimer
