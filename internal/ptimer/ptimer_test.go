package ptimer

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestFires: a timer calls its function once, after its time, and again
// after each Reset.
func TestFires(t *testing.T) {
	fired := make(chan time.Time, 10)
	start := time.Now()
	tm := AfterFunc(5*time.Millisecond, func() { fired <- time.Now() })
	defer tm.Close()
	select {
	case at := <-fired:
		if at.Sub(start) < 5*time.Millisecond {
			t.Fatalf("fired after %v, want at least 5ms", at.Sub(start))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("did not fire")
	}
	for range 3 {
		start = time.Now()
		if tm.Reset(2 * time.Millisecond) {
			t.Error("Reset after firing reports the timer was set")
		}
		select {
		case at := <-fired:
			if at.Sub(start) < 2*time.Millisecond {
				t.Fatalf("fired after %v, want at least 2ms", at.Sub(start))
			}
		case <-time.After(5 * time.Second):
			t.Fatal("did not fire after Reset")
		}
	}
}

// TestStop: a stopped timer does not fire, a timer set again after a Stop
// does, and moving a timer later delays its call.
func TestStop(t *testing.T) {
	var n atomic.Int32
	fired := make(chan struct{}, 10)
	tm := AfterFunc(time.Hour, func() { n.Add(1); fired <- struct{}{} })
	defer tm.Close()
	if !tm.Stop() {
		t.Error("Stop of a set timer reports it was not set")
	}
	if tm.Stop() {
		t.Error("second Stop reports the timer was set")
	}
	tm.Reset(time.Millisecond)
	tm.Stop()
	start := time.Now()
	tm.Reset(time.Millisecond)
	tm.Reset(30 * time.Millisecond) // moved later before it fired
	select {
	case <-fired:
		if d := time.Since(start); d < 30*time.Millisecond {
			t.Fatalf("fired after %v, want at least 30ms", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("did not fire after Stop and Reset")
	}
	// A stopped timer stays silent: set it far ahead, stop it, and wait
	// for a second timer set after it.
	tm.Reset(20 * time.Millisecond)
	tm.Stop()
	other := AfterFunc(40*time.Millisecond, func() { fired <- struct{}{} })
	defer other.Close()
	<-fired
	if got := n.Load(); got != 1 {
		t.Fatalf("the timer fired %d times, want 1", got)
	}
}

// TestFiresOncePerSetting: each setting of a timer calls its function
// once, never twice (the timerfd and the runtime timer set beside it both
// expire), and the calls never overlap; also while every thread of the
// process is busy, when the runtime's timer is the one that comes first.
func TestFiresOncePerSetting(t *testing.T) {
	for _, busy := range []bool{false, true} {
		stop := make(chan struct{})
		var spinners sync.WaitGroup
		if busy {
			for range runtime.GOMAXPROCS(0) {
				spinners.Go(func() {
					for {
						select {
						case <-stop:
							return
						default:
						}
					}
				})
			}
		}
		var (
			calls, inside atomic.Int32
			fired         = make(chan struct{}, 1)
		)
		tm := AfterFunc(time.Hour, func() {
			if inside.Add(1) != 1 {
				t.Error("two calls of the function at once")
			}
			calls.Add(1)
			inside.Add(-1)
			fired <- struct{}{}
		})
		const settings = 100
		for i := range settings {
			tm.Reset(time.Duration(i%3) * 100 * time.Microsecond)
			select {
			case <-fired:
			case <-time.After(5 * time.Second):
				t.Fatalf("busy %v: setting %d did not fire", busy, i)
			}
		}
		// One more setting, and a second timer set after it: by the time the
		// second fires, a duplicate call of the last setting would have come.
		tm.Reset(time.Millisecond)
		<-fired
		done := make(chan struct{})
		other := AfterFunc(20*time.Millisecond, func() { close(done) })
		<-done
		other.Close()
		tm.Close()
		close(stop)
		spinners.Wait()
		if got := calls.Load(); got != settings+1 {
			t.Fatalf("busy %v: %d calls for %d settings", busy, got, settings+1)
		}
	}
}

// TestClose: a closed timer neither fires nor can be set again.
func TestClose(t *testing.T) {
	var n atomic.Int32
	tm := AfterFunc(time.Millisecond, func() { n.Add(1) })
	if err := tm.Close(); err != nil {
		t.Fatal(err)
	}
	if tm.Reset(time.Millisecond) {
		t.Error("Reset of a closed timer reports it was set")
	}
	done := make(chan struct{})
	other := AfterFunc(20*time.Millisecond, func() { close(done) })
	defer other.Close()
	<-done
	if got := n.Load(); got != 0 {
		t.Fatalf("a closed timer fired %d times", got)
	}
}

// BenchmarkLateness reports how late a Timer and time.AfterFunc call
// their function after the time they were set for, at p50 and p99.
func BenchmarkLateness(b *testing.B) {
	for _, c := range []struct {
		name string
		make func(time.Duration, func()) Stopper
	}{{"ptimer", AfterFunc}, {"time.AfterFunc", fallback}} {
		b.Run(c.name, func(b *testing.B) {
			const n = 300
			late := make([]time.Duration, 0, n)
			at := make(chan time.Time, 1)
			tm := c.make(time.Hour, func() { at <- time.Now() })
			defer tm.Close()
			for i := range n {
				d := time.Duration(1+i%7)*time.Millisecond + time.Duration(i*37%1000)*time.Microsecond
				due := time.Now().Add(d)
				tm.Reset(d)
				late = append(late, (<-at).Sub(due))
			}
			slices.Sort(late)
			b.ReportMetric(float64(late[n/2])/1e6, "p50-ms")
			b.ReportMetric(float64(late[n*99/100])/1e6, "p99-ms")
		})
	}
}
