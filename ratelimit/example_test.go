package ratelimit_test

import (
	"context"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/hourglass-io/hourglass/memstore"
	"github.com/hourglass-io/hourglass/ratelimit"
)

// One SMS per phone number per 30 minutes, for every instance of a service
// sharing the store (on Redis: redisstore.New(ctx, client, nil).RateLimits()).
func Example_sms() {
	ctx := context.Background()
	s, err := memstore.New(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	l, err := ratelimit.New(s.RateLimits(), nil)
	if err != nil {
		log.Fatal(err)
	}

	sms := ratelimit.Every(30 * time.Minute)
	for _, phone := range []string{"+15550100", "+15550100", "+15550101"} {
		res, err := l.Allow(ctx, "sms:"+phone, sms)
		if err != nil {
			fmt.Println(err) // the store failed: not allowed, never a silent "no"
			continue
		}
		if res.Allowed {
			fmt.Println(phone, "sent")
		} else {
			fmt.Println(phone, "refused, retry in", res.RetryAfter.Round(time.Minute))
		}
	}
	// Output:
	// +15550100 sent
	// +15550100 refused, retry in 30m0s
	// +15550101 sent
}

// Workers on many machines share 100 requests per second to a fragile
// downstream service. Each calls Wait before a request: slots are handed out
// in the order the reservations reach the store, so no worker starves.
func Example_downstream() {
	ctx := context.Background()
	s, err := memstore.New(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	l, err := ratelimit.New(s.RateLimits(), nil)
	if err != nil {
		log.Fatal(err)
	}

	downstream := ratelimit.PerSecond(100).WithBurst(1) // evenly spaced, 10 ms apart
	var mu sync.Mutex
	served := map[int]int{}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for range 5 {
				if err := l.Wait(ctx, "billing-api", downstream); err != nil {
					fmt.Println(err)
					return
				}
				mu.Lock()
				served[w]++ // call the service here
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	fmt.Println(served)
	// Output: map[0:5 1:5 2:5 3:5]
}

// A funnel of 10 units that drains in 10 seconds, of which each call takes 3.
func ExampleFunnel() {
	ctx := context.Background()
	s, err := memstore.New(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	l, err := ratelimit.New(s.RateLimits(), nil)
	if err != nil {
		log.Fatal(err)
	}

	f := ratelimit.Funnel(10, 10*time.Second, 3)
	for range 4 {
		res, _ := l.Allow(ctx, "report:7", f)
		fmt.Println(res.Allowed, res.Remaining, res.RetryAfter.Round(100*time.Millisecond))
	}
	// Output:
	// true 2 0s
	// true 1 0s
	// true 0 0s
	// false 0 2s
}

// Several limits on one key are checked and charged together.
func ExampleLimiter_AllowN() {
	ctx := context.Background()
	s, err := memstore.New(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	l, err := ratelimit.New(s.RateLimits(), nil)
	if err != nil {
		log.Fatal(err)
	}

	perSecond, perDay := ratelimit.Every(time.Second), ratelimit.PerDay(100)
	res, _ := l.AllowN(ctx, "user:42", 1, perSecond, perDay)
	fmt.Println(res.Allowed, res.Remaining)
	res, _ = l.AllowN(ctx, "user:42", 1, perSecond, perDay)
	fmt.Println(res.Allowed, res.RetryAfter.Round(100*time.Millisecond))
	// Output:
	// true 0
	// false 1s
}

// A reservation claims a future slot; Cancel gives it back.
func ExampleLimiter_Reserve() {
	ctx := context.Background()
	s, err := memstore.New(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	l, err := ratelimit.New(s.RateLimits(), nil)
	if err != nil {
		log.Fatal(err)
	}

	lim := ratelimit.Every(time.Minute)
	for range 3 {
		r, _ := l.Reserve(ctx, "export", 90*time.Second, lim)
		fmt.Println(r.OK(), r.Delay().Round(time.Second))
		if r.Delay() > 0 {
			r.Cancel(ctx) // not needed after all
		}
	}
	// Output:
	// true 0s
	// true 1m0s
	// true 1m0s
}

// The exact sliding log: at most 3 in any 10 seconds.
func ExampleLimit_slidingLog() {
	ctx := context.Background()
	s, err := memstore.New(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	l, err := ratelimit.New(s.RateLimits(), nil)
	if err != nil {
		log.Fatal(err)
	}

	lim := ratelimit.Limit{Events: 3, Per: 10 * time.Second, Algorithm: ratelimit.SlidingLog}
	for range 4 {
		res, _ := l.Allow(ctx, "login:alice", lim)
		fmt.Println(res.Allowed, res.Remaining)
	}
	// Output:
	// true 2
	// true 1
	// true 0
	// false 0
}

// A request counts against its user's limit and its tenant's: it passes
// only when both have room, and a refused request charges neither.
func ExampleLimiter_AllowAll() {
	ctx := context.Background()
	s, err := memstore.New(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	l, err := ratelimit.New(s.RateLimits(), nil)
	if err != nil {
		log.Fatal(err)
	}

	perUser := []ratelimit.Limit{ratelimit.PerMinute(2)}
	perTenant := []ratelimit.Limit{ratelimit.PerMinute(3)}
	for _, user := range []string{"ann", "ann", "bob", "bob"} {
		ok, res, err := l.AllowAll(ctx, []ratelimit.Request{
			{Key: "user:" + user, N: 1, Limits: perUser},
			{Key: "tenant:acme", N: 1, Limits: perTenant},
		})
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(user, ok, "user left:", res[0].Remaining, "tenant left:", res[1].Remaining)
	}
	// Output:
	// ann true user left: 1 tenant left: 2
	// ann true user left: 0 tenant left: 1
	// bob true user left: 1 tenant left: 0
	// bob false user left: 1 tenant left: 0
}
