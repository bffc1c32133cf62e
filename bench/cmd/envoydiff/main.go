// Command envoydiff runs envoyproxy/ratelimit (built from the module
// proxy, in this process) and hourglass's server/envoyrl on the same
// configuration and the same redis-server, which it starts itself, and
// compares:
//
//   - configuration files: each file of a corpus is loaded by both
//     loaders, which must agree on accepting or refusing it;
//   - answers: a scripted sequence of ShouldRateLimit requests goes to
//     both; every answer's overall code, and each descriptor's code,
//     current_limit and limit_remaining, must be the same, except at the
//     steps that show a deliberate difference, which it names.
//     duration_until_reset is printed, not compared: envoyproxy/ratelimit
//     counts fixed windows, hourglass rolling ones (docs/envoy.md).
//
// It exits 1 on an unexpected difference. It is not part of CI: it needs
// envoyproxy/ratelimit's module and a redis-server.
//
// cd bench && go run ./cmd/envoydiff
package main

import (
	"context"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	rlconfig "github.com/envoyproxy/ratelimit/src/config"
	"github.com/envoyproxy/ratelimit/src/service_cmd/runner"
	"github.com/envoyproxy/ratelimit/src/settings"
	rlstats "github.com/envoyproxy/ratelimit/src/stats"
	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
	"github.com/hourglass-io/hourglass/ratelimit"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/hourglass-io/hourglass/server/envoyrl"
	gostats "github.com/lyft/gostats"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func main() {
	bad := 0
	fmt.Println("== configuration files: accepted (ok) or refused by each loader")
	bad += compareConfigs()
	fmt.Println()
	fmt.Println("== answers to a scripted request sequence")
	n, err := compareAnswers()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bad += n
	fmt.Println()
	if bad > 0 {
		fmt.Printf("envoydiff: %d unexpected difference(s)\n", bad)
		os.Exit(1)
	}
	fmt.Println("envoydiff: no unexpected difference")
}

// compareConfigs loads each file of the corpus with both loaders.
func compareConfigs() int {
	bad := 0
	dir, err := os.MkdirTemp("", "envoydiff-cfg")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	for i, c := range corpus {
		p := filepath.Join(dir, fmt.Sprintf("c%d.yaml", i))
		if err := os.WriteFile(p, []byte(c.yaml), 0o644); err != nil {
			panic(err)
		}
		refErr := referenceLoad(p, c.yaml)
		_, hgErr := envoyrl.LoadConfig(p)
		verdict := "same"
		if (refErr == nil) != (hgErr == nil) {
			verdict = "DIFFERENT"
			bad++
		}
		fmt.Printf("%-9s %-36s reference: %-7s hourglass: %s\n", verdict, c.name, outcome(refErr, dir), outcome(hgErr, dir))
	}
	return bad
}

func outcome(err error, dir string) string {
	if err == nil {
		return "ok"
	}
	s := strings.ReplaceAll(err.Error(), dir+"/", "")
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 90 {
		s = s[:90] + "…"
	}
	return "refused (" + s + ")"
}

// referenceLoad loads a file as envoyproxy/ratelimit does, turning its
// panics into an error.
func referenceLoad(name, content string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	manager := rlstats.NewStatManager(gostats.NewStore(gostats.NewNullSink(), false), settings.NewSettings())
	root := rlconfig.ConfigFileContentToYaml(name, content)
	rlconfig.NewRateLimitConfigImpl([]rlconfig.RateLimitConfigToLoad{{Name: name, ConfigYaml: root}}, manager, false)
	return nil
}

// step is one request of the script. deliberate names the difference
// expected at this step, "" when the answers must be the same.
type step struct {
	name       string
	domain     string
	hits       uint32
	ds         []*rlv3.RateLimitDescriptor
	deliberate string
}

func d(kv ...string) *rlv3.RateLimitDescriptor {
	out := &rlv3.RateLimitDescriptor{}
	for i := 0; i < len(kv); i += 2 {
		out.Entries = append(out.Entries, &rlv3.RateLimitDescriptor_Entry{Key: kv[i], Value: kv[i+1]})
	}
	return out
}

func hits(x *rlv3.RateLimitDescriptor, n uint64) *rlv3.RateLimitDescriptor {
	x.HitsAddend = wrapperspb.UInt64(n)
	return x
}

func limit(x *rlv3.RateLimitDescriptor, rpu uint32, unit typev3.RateLimitUnit) *rlv3.RateLimitDescriptor {
	x.Limit = &rlv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: rpu, Unit: unit}
	return x
}

func one(name string, x *rlv3.RateLimitDescriptor) step {
	return step{name: name, domain: "diff", ds: []*rlv3.RateLimitDescriptor{x}}
}

// The deliberate differences (docs/envoy.md).
const (
	allOrNone  = "all-or-none: a request refused for one descriptor charges none of the others"
	notCharged = "a refused hit is not charged: a check of 0 hits after a refusal passes"
)

func script() []step {
	var s []step
	for i := range 4 {
		s = append(s, one(fmt.Sprintf("3/minute, hit %d", i+1), d("remote_address", "192.0.2.7")))
	}
	s = append(s,
		one("unlimited value", d("remote_address", "10.0.0.1")),
		one("nested 2/hour, hit 1", d("tenant", "acme", "path", "/upload")),
		one("nested 2/hour, hit 2", d("tenant", "acme", "path", "/upload")),
		one("nested 2/hour, hit 3", d("tenant", "acme", "path", "/upload")),
		one("the parent alone", d("tenant", "acme")),
		one("an unknown nested value", d("tenant", "acme", "path", "/other")),
		one("an unknown key", d("nothing", "x")),
		step{name: "an unknown domain", domain: "elsewhere", ds: []*rlv3.RateLimitDescriptor{d("remote_address", "1")}},
		one("wildcard bot-a", d("user_agent", "bot-a")),
		one("wildcard bot-a again", d("user_agent", "bot-a")),
		one("wildcard bot-b, its own counter", d("user_agent", "bot-b")),
		one("not matching the wildcard", d("user_agent", "curl")),
		one("share_threshold shared-a", d("files", "shared-a")),
		one("share_threshold shared-b", d("files", "shared-b")),
		one("share_threshold shared-c, shared counter", d("files", "shared-c")),
		one("shadow mode, hit 1", d("shadowed", "x")),
		one("shadow mode, hit 2", d("shadowed", "x")),
		one("quota mode, hit 1", d("quota", "x")),
		one("quota mode, hit 2", d("quota", "x")),
		step{name: "replaces, hit 1", domain: "diff", ds: []*rlv3.RateLimitDescriptor{d("plan", "free"), d("plan_override", "vip")}},
		step{name: "replaces, hit 2", domain: "diff", ds: []*rlv3.RateLimitDescriptor{d("plan", "free"), d("plan_override", "vip")}},
		one("the replaced limit alone, hit 1", d("plan", "free")),
		one("the replaced limit alone, hit 2", d("plan", "free")),
		one("request hits_addend 0 counts 1", d("ten", "h")),
		step{name: "request hits_addend 5", domain: "diff", hits: 5, ds: []*rlv3.RateLimitDescriptor{d("ten", "h")}},
		one("descriptor hits_addend 0 checks", hits(d("ten", "h"), 0)),
		one("descriptor hits_addend 0 checks again", hits(d("ten", "h"), 0)),
		step{name: "descriptor hits_addend 4 over request's 9", domain: "diff", hits: 9, ds: []*rlv3.RateLimitDescriptor{hits(d("ten", "h"), 4)}},
		one("descriptor hits_addend 0 at the limit", hits(d("ten", "h"), 0)),
		one("one more, over", d("ten", "h")),
		step{name: "descriptor hits_addend 0 after a refusal", domain: "diff", ds: []*rlv3.RateLimitDescriptor{hits(d("ten", "h"), 0)}, deliberate: notCharged},
		step{name: "hits_addend 11 on 10 an hour", domain: "diff", hits: 11, ds: []*rlv3.RateLimitDescriptor{d("ten", "big")}},
		one("a billion a second, 1000 hits", hits(d("huge", "x"), 1000)),
		one("requests_per_unit 0", d("none", "x")),
		step{name: "requests_per_unit 0, 0 hits after a refusal", domain: "diff", ds: []*rlv3.RateLimitDescriptor{hits(d("none", "x"), 0)}, deliberate: notCharged},
		one("requests_per_unit 0, 0 hits on a fresh key", hits(d("none", "fresh"), 0)),
		one("override of a known descriptor, hit 1", limit(d("ten", "o"), 1, typev3.RateLimitUnit_HOUR)),
		one("override of a known descriptor, hit 2", limit(d("ten", "o"), 1, typev3.RateLimitUnit_HOUR)),
		one("override of an unknown descriptor, hit 1", limit(d("nobody", "x", "deeper", "y"), 2, typev3.RateLimitUnit_DAY)),
		one("override of an unknown descriptor, hit 2", limit(d("nobody", "x", "deeper", "y"), 2, typev3.RateLimitUnit_DAY)),
		one("override of an unknown descriptor, hit 3", limit(d("nobody", "x", "deeper", "y"), 2, typev3.RateLimitUnit_DAY)),
		step{name: "override in an unknown domain", domain: "elsewhere", ds: []*rlv3.RateLimitDescriptor{limit(d("nobody", "x"), 0, typev3.RateLimitUnit_DAY)}},
		one("week", d("weekly", "x")),
		one("month", d("monthly", "x")),
		one("year", d("yearly", "x")),
		one("detailed_metric + value_to_metric", d("user", "alice")),
		step{name: "several: one over, one with room", domain: "diff", ds: []*rlv3.RateLimitDescriptor{d("remote_address", "192.0.2.7"), d("remote_address", "192.0.2.20"), d("nothing", "x"), d("remote_address", "10.0.0.1")}, deliberate: allOrNone},
		step{name: "the one that had room", domain: "diff", ds: []*rlv3.RateLimitDescriptor{d("remote_address", "192.0.2.20")}, deliberate: allOrNone},
		step{name: "several, all with room", domain: "diff", ds: []*rlv3.RateLimitDescriptor{d("remote_address", "192.0.2.21"), d("ten", "s"), d("weekly", "s")}},
	)
	return s
}

// answer is what is compared of a response.
func answer(r *rlsv3.RateLimitResponse) string {
	parts := []string{r.GetOverallCode().String()}
	for _, st := range r.GetStatuses() {
		p := st.GetCode().String()
		if cl := st.GetCurrentLimit(); cl != nil {
			p += fmt.Sprintf(" %d/%s", cl.GetRequestsPerUnit(), cl.GetUnit())
			if cl.GetName() != "" {
				p += " name=" + cl.GetName()
			}
		}
		rem := strconv.FormatUint(uint64(st.GetLimitRemaining()), 10)
		if st.GetLimitRemaining() == math.MaxUint32 {
			rem = "max"
		}
		p += " rem=" + rem
		parts = append(parts, p)
	}
	return strings.Join(parts, " | ")
}

func resets(r *rlsv3.RateLimitResponse) string {
	var out []string
	for _, st := range r.GetStatuses() {
		if st.GetDurationUntilReset() == nil {
			out = append(out, "-")
			continue
		}
		out = append(out, st.GetDurationUntilReset().AsDuration().Round(time.Second).String())
	}
	return strings.Join(out, ",")
}

func compareAnswers() (int, error) {
	srv, err := redistest.StartStandalone()
	if err != nil {
		return 0, err
	}
	defer srv.Stop()
	ref, stopRef, err := startReference(srv.Addr)
	if err != nil {
		return 0, err
	}
	defer stopRef()
	hg, stopHG, err := startHourglass(srv.Addr)
	if err != nil {
		return 0, err
	}
	defer stopHG()
	conns := make([]rlsv3.RateLimitServiceClient, 2)
	for i, target := range []string{ref, hg} {
		conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return 0, err
		}
		defer conn.Close()
		conns[i] = rlsv3.NewRateLimitServiceClient(conn)
	}
	// The reference's minute windows: start early in a minute, so that
	// the script (well under a second) stays in one.
	if s := time.Now().Second(); s > 40 {
		time.Sleep(time.Duration(61-s) * time.Second)
	}
	fmt.Printf("redis-server %s; envoyproxy/ratelimit at %s, hourglass (redisstore) at %s\n", srv.Addr, ref, hg)
	fmt.Println("compared: overall code | per descriptor: code, current_limit, limit_remaining; resets (duration_until_reset) shown as reference / hourglass")
	bad, deliberate := 0, map[string]int{}
	for i, st := range script() {
		req := &rlsv3.RateLimitRequest{Domain: st.domain, Descriptors: st.ds, HitsAddend: st.hits}
		var got [2]string
		var rs [2]string
		for j, c := range conns {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			r, err := c.ShouldRateLimit(ctx, req)
			cancel()
			if err != nil {
				got[j] = "error: " + err.Error()
				continue
			}
			got[j], rs[j] = answer(r), resets(r)
		}
		verdict := "same"
		switch {
		case got[0] == got[1] && st.deliberate != "":
			verdict = "same (a deliberate difference did not show)"
		case got[0] != got[1] && st.deliberate != "":
			verdict = "DELIBERATE"
			deliberate[st.deliberate]++
		case got[0] != got[1]:
			verdict = "DIFFERENT"
			bad++
		}
		fmt.Printf("%2d %-44s %s\n", i+1, st.name, verdict)
		if got[0] == got[1] {
			fmt.Printf("     both:      %s   resets %s / %s\n", got[0], rs[0], rs[1])
		} else {
			fmt.Printf("     reference: %s   resets %s\n     hourglass: %s   resets %s\n", got[0], rs[0], got[1], rs[1])
			if st.deliberate != "" {
				fmt.Printf("     deliberate: %s\n", st.deliberate)
			}
		}
	}
	fmt.Println()
	fmt.Println("deliberate differences seen:")
	for k, n := range deliberate {
		fmt.Printf("  %d× %s\n", n, k)
	}
	fmt.Println("  every reset: envoyproxy/ratelimit's is the end of its fixed window; hourglass's, of its rolling one (when OK: until the key is idle; when OVER_LIMIT: until the same request passes)")
	return bad, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startReference runs envoyproxy/ratelimit's own runner in this process
// on the redis-server, with its defaults but for the ports, the stats
// sink (Prometheus) and the Redis address.
func startReference(addr string) (string, func(), error) {
	dir, err := os.MkdirTemp("", "envoydiff-rl")
	if err != nil {
		return "", nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "rl", "config"), 0o755); err != nil {
		return "", nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "rl", "config", "diff.yaml"), []byte(diffConfig), 0o644); err != nil {
		return "", nil, err
	}
	s := settings.NewSettings()
	var ports [4]int
	for i := range ports {
		if ports[i], err = freePort(); err != nil {
			return "", nil, err
		}
	}
	s.Host, s.Port, s.DebugHost, s.DebugPort, s.GrpcHost, s.GrpcPort = "127.0.0.1", ports[0], "127.0.0.1", ports[1], "127.0.0.1", ports[2]
	s.UseStatsd, s.UsePrometheus, s.PrometheusAddr = false, true, "127.0.0.1:"+strconv.Itoa(ports[3])
	s.RuntimePath, s.RuntimeSubdirectory, s.RuntimeWatchRoot = dir, "rl", false
	s.BackendType, s.RedisSocketType, s.RedisType, s.RedisUrl, s.RedisPoolSize = "redis", "tcp", "SINGLE", addr, 8
	s.LogLevel = "WARN"
	r := runner.NewRunner(s)
	go r.Run()
	target := "127.0.0.1:" + strconv.Itoa(ports[2])
	deadline := time.Now().Add(15 * time.Second)
	for {
		conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_, err = rlsv3.NewRateLimitServiceClient(conn).ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{Domain: "warm", Descriptors: []*rlv3.RateLimitDescriptor{d("k", "v")}})
			cancel()
			conn.Close()
			if err == nil {
				break
			}
		}
		if time.Now().After(deadline) {
			r.Stop()
			return "", nil, fmt.Errorf("envoyproxy/ratelimit did not answer: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return target, func() { r.Stop(); os.RemoveAll(dir) }, nil
}

func startHourglass(addr string) (string, func(), error) {
	c := redis.NewClient(&redis.Options{Addr: addr})
	st, err := redisstore.New(context.Background(), c, &redisstore.Options{Prefix: "hgdiff:"})
	if err != nil {
		return "", nil, err
	}
	dir, err := os.MkdirTemp("", "envoydiff-hg")
	if err != nil {
		return "", nil, err
	}
	p := filepath.Join(dir, "diff.yaml")
	if err := os.WriteFile(p, []byte(diffConfig), 0o644); err != nil {
		return "", nil, err
	}
	cfg, err := envoyrl.LoadConfig(p)
	if err != nil {
		return "", nil, err
	}
	limiter, err := ratelimit.New(st.RateLimits(), nil)
	if err != nil {
		return "", nil, err
	}
	srv := &envoyrl.Server{Limiter: limiter, Config: cfg, ReloadInterval: -1}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	done := make(chan struct{})
	go func() { srv.Serve(l); close(done) }()
	return l.Addr().String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		<-done
		st.Close()
		c.Close()
		os.RemoveAll(dir)
	}, nil
}
