package faulttest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/redis/go-redis/v9"
)

// A Sentinel failover under queue load whose replica stalled (SIGSTOP)
// for two seconds before the master was killed, with and
// without redisstore.Options.Replicas: 4 producers put jobs, and the test
// counts the acknowledged puts the promoted replica does not have. With
// the replica wait none is lost (a put is acknowledged only once the
// replica has it; while the replica is stalled, and until the old master
// has come back as a replica of the new one, puts fail with
// queue.ErrNotReplicated instead); without it, what the stalled replica
// never received is lost. The master keeps at most 256 kB for a replica
// that does not read, so the stall breaks the link.
func TestSentinelFailoverStalledReplica(t *testing.T) {
	for _, wait := range []bool{false, true} {
		name := "without replica wait"
		if wait {
			name = "with replica wait"
		}
		t.Run(name, func(t *testing.T) {
			ctx := deadline(t, 120*time.Second)
			sen := redistest.NewSentinel(t)
			c := redis.NewFailoverClient(&redis.FailoverOptions{
				MasterName: sen.MasterName, SentinelAddrs: sen.SentinelAddrs(), MaxRetries: -1,
				DialTimeout: 200 * time.Millisecond, ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond,
			})
			defer c.Close()
			var opts *redisstore.Options
			if wait {
				opts = &redisstore.Options{Replicas: 1, ReplicaTimeout: 100 * time.Millisecond}
			}
			q := openQueue(t, ctx, c, opts)

			var (
				mu       sync.Mutex
				acked    []string
				notRepl  int
				failures int
				lastOK   time.Time
			)
			load, stop := context.WithCancel(ctx)
			var wg sync.WaitGroup
			for p := range 4 {
				wg.Go(func() {
					for n := 0; load.Err() == nil; n++ {
						body := fmt.Sprintf("p%d-%d", p, n)
						_, err := q.Put(load, "fo", queue.NewJob{Body: []byte(body)})
						mu.Lock()
						switch {
						case err == nil:
							acked = append(acked, body)
							lastOK = time.Now()
						case errors.Is(err, queue.ErrNotReplicated):
							notRepl++
						case load.Err() == nil:
							failures++
						}
						mu.Unlock()
					}
				})
			}
			count := func() int {
				mu.Lock()
				defer mu.Unlock()
				return len(acked)
			}
			waitFor(t, ctx, "1,000 puts", func() bool { return count() >= 1000 })
			// A stalled replica's link breaks once the master holds 256 kB
			// for it (Redis's default for replicas is 256 MB): what the
			// master acknowledges after that never reaches the replica. (On
			// loopback the kernel's buffers alone hold a half-second stall
			// of this load, which the replica then reads.)
			mc := redis.NewClient(&redis.Options{Addr: sen.Master.Addr})
			defer mc.Close()
			if err := mc.ConfigSet(ctx, "client-output-buffer-limit", "replica 262144 65536 1").Err(); err != nil {
				t.Fatal(err)
			}

			// The fault: the replica stalls for two seconds, the master
			// dies, and the replica wakes.
			if err := syscall.Kill(sen.Replica.Pid(), syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			time.Sleep(2 * time.Second) // the length of the stall
			sen.Master.Crash()
			killed := time.Now()
			if err := syscall.Kill(sen.Replica.Pid(), syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
			before := count()

			// The old master comes back (Sentinel makes it a replica of the
			// new one) once the failover is done: it is what a replica
			// wait needs after a failover.
			// Every sentinel must know of the promotion first: one that
			// does not yet would make the promoted replica a replica of the
			// old master, which comes back empty (it keeps nothing on disk),
			// and the replica would drop everything to copy it. Redis's
			// docs warn against restarting such a master on its own. So
			// it comes back as a replica of the promoted one from its first
			// moment, never as an empty master.
			var scs []*redis.Client
			for _, addr := range sen.SentinelAddrs() {
				sc := redis.NewClient(&redis.Options{Addr: addr})
				defer sc.Close()
				scs = append(scs, sc)
			}
			waitFor(t, ctx, "the replica promoted, as every sentinel knows", func() bool {
				for _, sc := range scs {
					addr, err := sc.Do(ctx, "SENTINEL", "get-master-addr-by-name", sen.MasterName).StringSlice()
					if err != nil || len(addr) != 2 || addr[0]+":"+addr[1] != sen.Replica.Addr {
						return false
					}
				}
				return true
			})
			promoted := time.Now()
			if err := sen.Master.StartReplicaOf(sen.Replica); err != nil {
				t.Fatal(err)
			}
			waitFor(t, ctx, "puts acknowledged again", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return lastOK.After(promoted) && len(acked) > before+100
			})
			back := time.Now()
			stop()
			wg.Wait()

			// What the new master has: every job it holds, by body. The
			// failover may still show (a connection the client closes as
			// it moves, a replica wait that times out): a failed call is
			// made again, and a job a failed reserve took is found among
			// the reservations at the end.
			held := map[string]bool{}
			retries := 0
			retry := func(err error) {
				t.Helper()
				t.Logf("%s: draining: %v; made again", name, err)
				if retries++; retries > 100 || ctx.Err() != nil {
					t.Fatalf("draining: %v (%d failed calls)", err, retries)
				}
			}
			for {
				j, err := q.Reserve(ctx, queue.ReserveOptions{Tubes: []string{"fo"}, Timeout: -1})
				if errors.Is(err, queue.ErrTimeout) {
					break
				}
				if err != nil {
					retry(err)
					continue
				}
				held[string(j.Body)] = true
				for {
					err := q.Delete(ctx, j.ID)
					if err == nil || errors.Is(err, queue.ErrNotReplicated) || errors.Is(err, queue.ErrNotFound) {
						break
					}
					retry(err)
				}
			}
			for {
				rs, err := q.Held(ctx)
				if err != nil {
					retry(err)
					continue
				}
				for _, r := range rs {
					j, err := q.Peek(ctx, r.ID)
					if err != nil {
						t.Fatalf("draining: a job reserved by a failed call: %v", err)
					}
					held[string(j.Body)] = true
				}
				break
			}
			if retries > 0 {
				t.Logf("%s: draining made %d calls again", name, retries)
			}
			lost := 0
			for _, b := range acked {
				if !held[b] {
					lost++
				}
			}
			t.Logf("%s: %d puts acknowledged, %d refused as not replicated, %d other failures; acknowledged puts lost: %d; replica promoted %v after the kill, puts acknowledged again %v after it",
				name, len(acked), notRepl, failures, lost, promoted.Sub(killed).Round(time.Millisecond), back.Sub(killed).Round(time.Millisecond))
			if wait && lost > 0 {
				t.Errorf("with the replica wait, %d acknowledged puts were lost", lost)
			}
			if wait && notRepl == 0 {
				t.Error("with the replica wait, no put was refused while the replica was stalled")
			}
		})
	}
}
