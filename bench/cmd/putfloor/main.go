// Command putfloor measures what bounds the Redis CPU of a one-job put:
// Redis's own CPU per call (INFO cpu, before and after, divided by the
// calls) of five calls made side by side on one private redis-server, in
// alternating rounds:
//
//   - ping: a PING, the cost of a request and its reply;
//   - empty: an FCALL with the put's 10 keys and 9 arguments that returns
//     at once, the cost of entering a function with them;
//   - floor: an FCALL of the fewest lines that issue the put's seven
//     commands (TIME, the tube's HMGET, the id counter's HINCRBY, the
//     record's HSET, the ready set's ZADD, the tube's counters' HSET, the
//     wake-up's SPUBLISH), the least any put with hourglass's guarantees
//     costs;
//   - hourglass: hourglass's put function itself, one job a call;
//   - hourglass×8: the same with 8 jobs a call (as the runner merges the
//     puts of callers that arrive together), per job;
//   - asynq-like: a script of asynq's enqueue's three commands (EXISTS,
//     HSET of the task, LPUSH), what a put costs without the store's clock,
//     counters, tube state or wake-ups.
//
// Each call goes on its own from -c goroutines, as an unbatched put would.
//
//	cd bench && go run ./cmd/putfloor -rounds 5
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/redis/go-redis/v9"
)

// floorLib holds the floor functions: floor_empty and floor_put.
const floorLib = `#!lua name=putfloor
redis.register_function('floor_empty', function(keys, args) return { 1, 0 } end)
redis.register_function('floor_put', function(keys, args)
  local t = redis.call('TIME')
  local us = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local h = redis.call('HMGET', keys[4], 'nd', 'hw', 'ix', 'live', 'total', 'pu')
  local id = redis.call('HINCRBY', keys[10], 'fid', 1)
  local idh = string.format('%014x', id * 256)
  redis.call('HSET', keys[2], idh, cmsgpack.pack({ 1, 5, 0, 60000, math.floor(us / 1000) }, args[9]))
  redis.call('ZADD', keys[5], args[4], idh)
  redis.call('HSET', keys[4], 'total', (tonumber(h[5]) or 0) + 1, 'live', (tonumber(h[4]) or 0) + 1)
  redis.call('SPUBLISH', keys[4] .. ':w', '1')
  return { id, 0 }
end)
`

// asynqLike is a script with the commands of asynq's enqueue.
const asynqLike = `if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'msg', ARGV[1], 'state', 'pending', 'pending_since', ARGV[3])
redis.call('LPUSH', KEYS[2], ARGV[2])
return 1`

func main() {
	n := flag.Int("n", 20000, "calls of each kind a round")
	conc := flag.Int("c", 8, "goroutines making the calls")
	rounds := flag.Int("rounds", 3, "rounds, each running every kind once, in alternating orders")
	bin := flag.String("redis-server", "redis-server", "the redis-server binary")
	flag.Parse()
	log.SetFlags(0)
	ctx := context.Background()

	dir, err := os.MkdirTemp("", "putfloor")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "redis.sock")
	srv := exec.Command(*bin, "--port", "0", "--unixsocket", sock, "--save", "", "--appendonly", "no", "--dir", dir)
	if err := srv.Start(); err != nil {
		log.Fatal(err)
	}
	defer func() { _ = srv.Process.Kill(); _, _ = srv.Process.Wait() }()
	c := redis.NewClient(&redis.Options{Network: "unix", Addr: sock, PoolSize: *conc + 2, MaxRetries: -1})
	defer c.Close()
	for deadline := time.Now().Add(10 * time.Second); c.Ping(ctx).Err() != nil; {
		if time.Now().After(deadline) {
			log.Fatal("redis-server did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := c.FunctionLoad(ctx, floorLib).Err(); err != nil {
		log.Fatal(err)
	}

	kinds := []string{"ping", "empty", "floor", "hourglass", "hourglass×8", "asynq-like"}
	per := map[string][]float64{}
	for r := 0; r < *rounds; r++ {
		order := slices.Clone(kinds)
		if r%2 == 1 {
			slices.Reverse(order)
		}
		for _, k := range order {
			us, err := round(ctx, c, k, *n, *conc)
			if err != nil {
				log.Fatalf("%s: %v", k, err)
			}
			per[k] = append(per[k], us)
		}
	}
	ver, _ := c.InfoMap(ctx, "server").Result()
	fmt.Printf("putfloor: Redis CPU per call (µs), medians of %d rounds, %d calls a round from %d goroutines, redis %s, load %s\n",
		*rounds, *n, *conc, ver["Server"]["redis_version"], loadavg())
	for _, k := range kinds {
		fmt.Printf("  %-11s %6.2f   %s\n", k, median(per[k]), fmtAll(per[k]))
	}
}

// round empties the server, makes the tube that hourglass's put needs,
// then runs n calls of kind k (n jobs: n/8 calls for hourglass×8) and
// returns Redis's CPU per job in µs.
func round(ctx context.Context, c *redis.Client, k string, n, conc int) (float64, error) {
	if err := c.FlushAll(ctx).Err(); err != nil {
		return 0, err
	}
	fn, keys, args, err := hourglassPut(ctx, c)
	if err != nil {
		return 0, err
	}
	sha, err := c.ScriptLoad(ctx, asynqLike).Result()
	if err != nil {
		return 0, err
	}
	args8 := slices.Clone(args)
	for range 7 {
		args8 = append(args8, args[3:]...)
	}
	calls := n
	if k == "hourglass×8" {
		calls = n / 8 // the same jobs, 8 a call
	}
	call := func(i int) error {
		switch k {
		case "ping":
			return c.Ping(ctx).Err()
		case "empty":
			return c.FCall(ctx, "floor_empty", keys, args...).Err()
		case "floor":
			return c.FCall(ctx, "floor_put", keys, args...).Err()
		case "hourglass":
			return c.FCall(ctx, fn, keys, args...).Err()
		case "hourglass×8":
			return c.FCall(ctx, fn, keys, args8...).Err()
		}
		id := strconv.Itoa(i)
		return c.EvalSha(ctx, sha, []string{"asynq:{default}:t:" + id, "asynq:{default}:pending"}, "body", id, time.Now().UnixNano()).Err()
	}
	t0, err := cpu(ctx, c)
	if err != nil {
		return 0, err
	}
	var wg sync.WaitGroup
	errs := make(chan error, conc)
	for g := 0; g < conc; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := g; i < calls; i += conc {
				if err := call(i); err != nil {
					errs <- err
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	t1, err := cpu(ctx, c)
	if err != nil {
		return 0, err
	}
	return (t1 - t0) * 1e6 / float64(n), nil
}

// hourglassPut puts one job through a Store to make the tube, and returns
// the put function's name and the KEYS and ARGV of a one-job put into it.
func hourglassPut(ctx context.Context, c *redis.Client) (string, []string, []any, error) {
	st, err := redisstore.New(ctx, c, nil)
	if err != nil {
		return "", nil, nil, err
	}
	q, err := queue.New(st, nil)
	if err != nil {
		return "", nil, nil, err
	}
	id, err := q.Put(ctx, "floor", queue.NewJob{Body: []byte("body"), TTR: time.Minute})
	_ = q.Close()
	_ = st.Close()
	if err != nil {
		return "", nil, nil, err
	}
	libs, err := c.FunctionList(ctx, redis.FunctionListQuery{}).Result()
	if err != nil {
		return "", nil, nil, err
	}
	fn := ""
	for _, l := range libs {
		for _, f := range l.Functions {
			if strings.HasPrefix(f.Name, "hg_put_") {
				fn = f.Name
			}
		}
	}
	t, err := c.Keys(ctx, "*:t:floor").Result()
	if err != nil || len(t) != 1 || fn == "" {
		return "", nil, nil, fmt.Errorf("no put function or tube key (%q, %v, %v)", fn, t, err)
	}
	base := strings.TrimSuffix(t[0], "t:floor")
	ids, err := c.Keys(ctx, "*ids").Result()
	if err != nil || len(ids) != 1 {
		return "", nil, nil, fmt.Errorf("no id key (%v, %v)", ids, err)
	}
	keys := []string{base + "m", base + "j", base + "tubes", t[0], t[0] + ":r", t[0] + ":d", t[0] + ":x", t[0] + ":b", t[0] + ":u", ids[0]}
	// ARGV: now ("" Redis's clock), tube, tag index, then pri, delay, ttr, unique key, trace context, body
	args := []any{"", "floor", uint64(id) % 256, 5, 0, 60000, "", "", "body"}
	return fn, keys, args, nil
}

func cpu(ctx context.Context, c *redis.Client) (float64, error) {
	m, err := c.InfoMap(ctx, "cpu").Result()
	if err != nil {
		return 0, err
	}
	u, err1 := strconv.ParseFloat(m["CPU"]["used_cpu_user"], 64)
	s, err2 := strconv.ParseFloat(m["CPU"]["used_cpu_sys"], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("INFO cpu: %v", m)
	}
	return u + s, nil
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

func fmtAll(v []float64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = strconv.FormatFloat(x, 'f', 2, 64)
	}
	return "(" + strings.Join(parts, " ") + ")"
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}
