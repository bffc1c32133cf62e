package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hourglass-io/hourglass"
	"github.com/hourglass-io/hourglass/internal/logging"
	"github.com/hourglass-io/hourglass/lock"
	"github.com/hourglass-io/hourglass/memstore"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/ratelimit"
	"github.com/hourglass-io/hourglass/schedule"
	"github.com/hourglass-io/hourglass/server/beanstalk"
	"github.com/hourglass-io/hourglass/server/envoyrl"
	"github.com/hourglass-io/hourglass/server/httpapi"
	"github.com/hourglass-io/hourglass/ttlhash"
	"github.com/redis/go-redis/v9"
)

const (
	// openTimeout bounds opening the store (connecting to Redis).
	openTimeout = 30 * time.Second
)

var serveCommand = &command{
	name:    "serve",
	forms:   []string{""},
	args:    "[flags]",
	summary: "run the server: the beanstalkd protocol, and the HTTP API, dashboard and metrics",
	envAll:  true,
	help: `The store is one of:

  ./hourglass-data, /var/lib/hourglass, file:///abs/dir
                       the embedded engine, durable in that directory
  mem://               the embedded engine in memory: jobs die with the process
  redis://[user:pass@]host:port[/db]    one Redis (rediss:// for TLS)
  redis+sentinel://[user:pass@]h1:26379,h2:26379/master[/db]
  redis+cluster://[user:pass@]h1:6379,h2:6379

--fsync and --max-jobs apply to the embedded engine only: with Redis, its
own persistence settings and maxmemory decide. --redis-replicas applies to
Redis only: with replicas (Sentinel, Cluster), replication is asynchronous
and a failover can lose the last acknowledged changes; with
--redis-replicas 1 the queue's changes are acknowledged only once a replica
has them (a change not acknowledged in a second is answered as a failure).

On --http-addr: the HTTP/JSON API under /v1 (its OpenAPI document at
/v1/openapi.json), the dashboard at /, Prometheus metrics at /metrics, and
GET /healthz, which answers 200 "ok" when the store answers, 503 otherwise.

With --auth-token (or --auth-token-file, or HOURGLASS_AUTH_TOKEN), every /v1
call, the dashboard's data and actions and /metrics need the header
"Authorization: Bearer <token>". serve refuses to listen on an address
beyond loopback (either listener) without a token. The beanstalkd protocol
has no authentication of its own: beyond loopback, put it behind --tls-cert
and a network you trust. --tls-cert and --tls-key serve both listeners over
TLS. --tls-client-ca adds mutual TLS: every listener (gRPC included) then
accepts only clients with a certificate signed by one of those CAs, and may
listen beyond loopback without a token.

--grpc-addr (off by default) serves Envoy's rate limit service,
envoy.service.ratelimit.v3, with gRPC health checking and reflection, from
the envoyproxy/ratelimit YAML configuration at --ratelimit-config (a file or
a directory, reloaded on change). The same token rules apply: beyond
loopback it needs a token, sent as "authorization: Bearer <token>" gRPC
metadata; --tls-cert serves it over TLS. See docs/envoy.md.

` + serveLimitsHelp + `
serve fires the schedules of its store while it runs (any number of servers
may: each tick is put once). --schedules-file sets the schedules a JSON file
declares at start, {"schedules":[{"name":..., "spec":..., "zone":...,
"job":{"tube":..., "body":...}, "misfire":{"policy":"catch_up","n":3}}]}
(the fields of PUT /v1/schedules/{name}; see docs/schedules.md): an
unchanged one changes nothing, a changed one is updated, and the store's
other schedules are left alone unless --schedules-prune. A bad file stops
serve before it opens the store, naming the schedule and the field.
` + tubeLimitsHelp + `
SIGTERM or SIGINT stops the server: it stops accepting, lets the
commands in flight finish (a waiting reserve ends without a reply), returns
reserved jobs to ready and closes the store, all within --shutdown-timeout;
a second signal stops it at once. SIGUSR1 puts it in drain mode: every later
put is answered DRAINING, everything else keeps working.

Examples:

  hourglass serve
  hourglass serve --store mem:// --log-level debug
  hourglass serve --store redis://:secret@10.0.0.5:6379/0 --addr 0.0.0.0:11300 \
      --http-addr 0.0.0.0:7480 --allowed-hosts queue.example.com --auth-token-file /etc/hourglass/token \
      --tls-cert /etc/hourglass/cert.pem --tls-key /etc/hourglass/key.pem
  HOURGLASS_STORE=/var/lib/hourglass HOURGLASS_FSYNC=everysec hourglass serve
`,
	flags: func(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
		var o serveOptions
		fs.StringVar(&o.store, "store", "./hourglass-data", "`URL` of the store: a directory, file:///dir, mem://, or a redis:// URL (see below)")
		fs.StringVar(&o.fsync, "fsync", memstore.FsyncAlways.String(), "`policy` for when the embedded engine's log reaches the disk: always, everysec or no")
		fs.StringVar(&o.beanstalkAddr, "addr", "127.0.0.1:11300", "`host:port` to serve the beanstalkd protocol on (the clients' --addr; HOURGLASS_ADDR sets both)")
		alias(fs, "beanstalk-addr", "addr") // the name of earlier releases
		fs.StringVar(&o.httpAddr, "http-addr", "127.0.0.1:7480", "`host:port` to serve HTTP on (the API, dashboard, /metrics, /healthz); empty: none")
		fs.StringVar(&o.authToken, "auth-token", "", "bearer `token` every HTTP API call must carry; required to listen beyond loopback")
		fs.StringVar(&o.allowedHosts, "allowed-hosts", "", "comma-separated `hosts` the HTTP Host header may name, against DNS rebinding; * allows all (default: localhost, 127.0.0.1, ::1 and the host --http-addr names)")
		fs.StringVar(&o.authTokenFile, "auth-token-file", "", "`file` holding the bearer token (its first line), instead of --auth-token")
		fs.StringVar(&o.tlsCert, "tls-cert", "", "PEM certificate `file`: serve both listeners over TLS (with --tls-key)")
		fs.StringVar(&o.tlsKey, "tls-key", "", "PEM private key `file` of --tls-cert")
		fs.IntVar(&o.redisReplicas, "redis-replicas", 0, "on Redis, acknowledge a put, reserve or delete only once `n` replicas have it (WAIT; a failover then loses none); 0: do not wait")
		fs.StringVar(&o.tlsClientCA, "tls-client-ca", "", "PEM `file` of the CAs whose client certificates every listener requires (mutual TLS; with --tls-cert)")
		fs.DurationVar(&o.maxWait, "max-wait", httpapi.DefaultMaxWait, "longest `duration` an HTTP long poll (reserve) waits")
		fs.IntVar(&o.maxWaits, "max-waits", httpapi.DefaultMaxWaits, "most long polls waiting at once, per protocol: HTTP reserves, hash event reads, lock obtains and rate limit waits that may wait (beyond: 429 too_many_waits), blocked beanstalkd reserves (beyond: OUT_OF_MEMORY) (a `count`)")
		fs.IntVar(&o.maxWatch, "max-watch", httpapi.DefaultMaxReserveTubes, "most `tubes` one reserve may name: an HTTP reserve's tubes (beyond: 400 too_many_tubes), a beanstalkd connection's watch list (beyond: OUT_OF_MEMORY)")
		fs.IntVar(&o.maxJobSize, "max-job-size", queue.DefaultMaxJobSize, "largest job body, in `bytes`")
		fs.IntVar(&o.maxJobs, "max-jobs", 0, "most `jobs` the embedded engine holds; a put beyond is answered OUT_OF_MEMORY (0: no cap)")
		fs.IntVar(&o.maxConns, "max-conns", 10000, "most open protocol `connections`; one more takes the place of the connection that has waited longest (over a second) for a command or a put's body, and is closed at once when every one is busy or waiting in reserve (0: no cap)")
		fs.DurationVar(&o.idleTimeout, "idle-timeout", 0, "close a connection that sends no command for this `duration` (0: never)")
		fs.DurationVar(&o.bodyTimeout, "body-timeout", beanstalk.DefaultBodyTimeout, "close a connection that takes longer than this `duration` to send a put's body once its command line is in, so that puts whose bodies never come do not hold connections (0: never)")
		fs.DurationVar(&o.shutdownTimeout, "shutdown-timeout", 10*time.Second, "how long a shutdown waits for commands in flight before it closes connections (a `duration`)")
		fs.StringVar(&o.logLevel, "log-level", "info", "least `level` logged: debug, info, warn or error (debug adds each connection and each slow command)")
		fs.StringVar(&o.logFormat, "log-format", "text", "log `format`: text or json")
		fs.BoolVar(&o.accessLog, "access-log", false, "log each HTTP request (method, path, status, bytes, duration_ms) and each gRPC call (method, code, duration_ms)")
		fs.Func("limit", "a named rate limit, `NAME=SPEC` (repeatable; see below)", func(s string) error { o.limits = append(o.limits, s); return nil })
		fs.StringVar(&o.limitsFile, "limits-file", "", "`file` of named rate limits, one NAME=SPEC a line (# comments)")
		fs.StringVar(&o.schedulesFile, "schedules-file", "", "JSON `file` of schedules to set at start (each set idempotently; see docs/schedules.md)")
		fs.BoolVar(&o.schedulesPrune, "schedules-prune", false, "with --schedules-file: delete the store's schedules the file does not list (default: leave them)")
		o.envoy.flags(fs)
		o.tracing.define(fs)
		o.tubeLimits.flags(fs)
		return func(ctx context.Context, c *cli, args []string) error {
			if len(args) > 0 {
				return usagef("serve takes no arguments, got %q", args)
			}
			fs.Visit(func(f *flag.Flag) {
				switch f.Name {
				case "fsync":
					o.fsyncSet = true
				case "max-jobs":
					o.maxJobsSet = true
				}
			})
			return c.serve(ctx, o)
		}
	},
}

type serveOptions struct {
	store                   string
	fsync                   string
	fsyncSet, maxJobsSet    bool // given on the command line or in the environment
	beanstalkAddr, httpAddr string
	maxJobSize, maxJobs     int
	maxConns                int
	maxWaits, maxWatch      int
	idleTimeout             time.Duration
	bodyTimeout             time.Duration
	shutdownTimeout         time.Duration
	logLevel                string
	logFormat               string
	accessLog               bool
	level                   slog.Level // parsed from logLevel
	authToken               string
	authTokenFile           string
	allowedHosts            string // --allowed-hosts, comma-separated; empty: the defaults
	tlsCert, tlsKey         string
	tlsClientCA             string
	redisReplicas           int
	maxWait                 time.Duration
	limits                  []string // --limit NAME=SPEC
	limitsFile              string
	schedulesFile           string // --schedules-file
	schedulesPrune          bool
	envoy                   envoyOptions   // --grpc-addr and its companions
	tracing                 tracingOptions // --otlp-endpoint, --otlp-protocol
	tubeLimits              tubeLimitOptions
}

// bodyTimeoutOrNever returns --body-timeout as beanstalk.Server.BodyTimeout:
// 0 (never) is negative there.
func (o *serveOptions) bodyTimeoutOrNever() time.Duration {
	if o.bodyTimeout == 0 {
		return -1
	}
	return o.bodyTimeout
}

// hostList returns --allowed-hosts as httpapi.Server.AllowedHosts: nil
// (the defaults) when not given.
func (o *serveOptions) hostList() []string {
	if o.allowedHosts == "" {
		return nil
	}
	var hosts []string
	for _, h := range strings.Split(o.allowedHosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			hosts = append(hosts, h)
		}
	}
	return hosts
}

func (o *serveOptions) validate() error {
	if _, err := memstore.ParseFsync(o.fsync); err != nil {
		return usagef("--fsync %q: want always, everysec or no", o.fsync)
	}
	if err := o.level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return usagef("--log-level %q: want debug, info, warn or error", o.logLevel)
	}
	if o.logFormat != "text" && o.logFormat != "json" {
		return usagef("--log-format %q: want text or json", o.logFormat)
	}
	switch {
	case o.store == "":
		return usagef("--store is empty")
	case strings.TrimSpace(o.allowedHosts) == "" && o.allowedHosts != "":
		return usagef("--allowed-hosts is blank")
	case o.beanstalkAddr == "":
		return usagef("--addr is empty")
	case o.maxJobSize < 1 || o.maxJobSize > queue.MaxJobSizeLimit:
		return usagef("--max-job-size %d: want 1 to %d", o.maxJobSize, queue.MaxJobSizeLimit)
	case o.maxJobs < 0:
		return usagef("--max-jobs %d: want 0 (no cap) or more", o.maxJobs)
	case o.maxConns < 0:
		return usagef("--max-conns %d: want 0 (no cap) or more", o.maxConns)
	case o.maxWaits < 1:
		return usagef("--max-waits %d: want 1 or more", o.maxWaits)
	case o.maxWatch < 1:
		return usagef("--max-watch %d: want 1 or more", o.maxWatch)
	case o.idleTimeout < 0:
		return usagef("--idle-timeout %v: want 0 (never) or more", o.idleTimeout)
	case o.bodyTimeout < 0:
		return usagef("--body-timeout %v: want 0 (never) or more", o.bodyTimeout)
	case o.shutdownTimeout <= 0:
		return usagef("--shutdown-timeout %v: want more than 0", o.shutdownTimeout)
	case o.maxWait <= 0:
		return usagef("--max-wait %v: want more than 0", o.maxWait)
	case o.authToken != "" && o.authTokenFile != "":
		return usagef("give --auth-token or --auth-token-file, not both")
	case (o.tlsCert == "") != (o.tlsKey == ""):
		return usagef("--tls-cert and --tls-key go together")
	case o.redisReplicas < 0:
		return usagef("--redis-replicas %d: want 0 (do not wait) or more", o.redisReplicas)
	case o.tlsClientCA != "" && o.tlsCert == "":
		return usagef("--tls-client-ca needs --tls-cert and --tls-key: the listeners must speak TLS to ask for client certificates")
	case o.schedulesPrune && o.schedulesFile == "":
		return usagef("--schedules-prune needs --schedules-file: the schedules to keep")
	}
	return nil
}

// token returns the bearer token of the options: --auth-token, or the first
// line of --auth-token-file.
func (o *serveOptions) token() (string, error) {
	if o.authTokenFile == "" {
		return o.authToken, nil
	}
	b, err := os.ReadFile(o.authTokenFile)
	if err != nil {
		return "", fmt.Errorf("--auth-token-file: %w", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	tok := strings.TrimSpace(line)
	if tok == "" {
		return "", fmt.Errorf("--auth-token-file %s: the file is empty", o.authTokenFile)
	}
	return tok, nil
}

// tlsConfig returns the TLS configuration of both listeners, nil without
// --tls-cert.
func (o *serveOptions) tlsConfig() (*tls.Config, error) {
	if o.tlsCert == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(o.tlsCert, o.tlsKey)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if o.tlsClientCA != "" {
		pem, err := os.ReadFile(o.tlsClientCA)
		if err != nil {
			return nil, fmt.Errorf("--tls-client-ca: %w", err)
		}
		cfg.ClientCAs = x509.NewCertPool()
		if !cfg.ClientCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-client-ca %s: no PEM certificate in the file", o.tlsClientCA)
		}
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// authenticated reports whether clients must prove who they are: a bearer
// token, or client certificates (mutual TLS). Only then may a listener be
// beyond loopback.
func authenticated(token string, tlsCfg *tls.Config) bool {
	return token != "" || (tlsCfg != nil && tlsCfg.ClientAuth == tls.RequireAndVerifyClientCert)
}

// serveConfig is what serve reads from its flags and files before it
// opens anything.
type serveConfig struct {
	token       string
	tls         *tls.Config
	namedLimits map[string][]ratelimit.Limit
	tubeLimits  map[string]queue.Limits
	schedules   []schedule.Schedule // of --schedules-file
}

// load checks the options and reads the files they name, whole, before
// the store opens: a bad flag or file changes nothing.
func (o *serveOptions) load() (cfg serveConfig, err error) {
	if err := o.validate(); err != nil {
		return cfg, err
	}
	if err := o.tracing.validate(); err != nil {
		return cfg, err
	}
	if err := o.envoy.validate(); err != nil {
		return cfg, err
	}
	if cfg.token, err = o.token(); err != nil {
		return cfg, err
	}
	if cfg.tls, err = o.tlsConfig(); err != nil {
		return cfg, err
	}
	if cfg.namedLimits, err = o.namedLimits(); err != nil {
		return cfg, err
	}
	if cfg.tubeLimits, err = o.tubeLimits.load(); err != nil {
		return cfg, err
	}
	if o.schedulesFile != "" {
		if cfg.schedules, err = loadSchedulesFile(o.schedulesFile); err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}

// serve runs the server until ctx ends (SIGINT, SIGTERM), then shuts it down.
func (c *cli) serve(ctx context.Context, o serveOptions) (err error) {
	cfg, err := o.load()
	if err != nil {
		return err
	}
	token, tlsCfg, namedLimits, tubeLimits, fileSchedules := cfg.token, cfg.tls, cfg.namedLimits, cfg.tubeLimits, cfg.schedules
	h, err := logging.New(c.stderr, o.logFormat, o.level)
	if err != nil {
		return err
	}
	// A store outage repeats its warnings several times a second: one
	// line per message every 10 seconds, with the count.
	log := slog.New(logging.NewDedup(h, 10*time.Second))
	redis.SetLogger(redisLogger{log})
	// Before anything is logged, so that a SIGUSR1 sent once the server
	// says it serves is never taken for a signal to terminate.
	drain := make(chan os.Signal, 1)
	if len(drainSignals) > 0 {
		signal.Notify(drain, drainSignals...)
		defer signal.Stop(drain)
	}

	stopTracing, err := o.tracing.start(ctx, log)
	if err != nil {
		return err
	}
	defer func() {
		// After the servers and the store: the last spans are flushed.
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if terr := stopTracing(sctx); terr != nil {
			log.Warn("exporting the last spans", "err", terr)
		}
	}()

	openCtx, cancel := context.WithTimeout(ctx, openTimeout)
	b, err := hourglass.Open(openCtx, o.store, &hourglass.Options{Fsync: o.fsync, MaxJobs: o.maxJobs, Logger: log, Replicas: o.redisReplicas})
	cancel()
	if err != nil {
		return openError(o.store, err)
	}
	q, err := queue.New(b.Queue, &queue.Options{MaxJobSize: o.maxJobSize})
	if err != nil {
		b.Close()
		return err
	}
	defer func() {
		q.Close()
		if cerr := b.Close(); cerr != nil {
			log.Error("closing the store", "err", cerr)
			err = errors.Join(err, fmt.Errorf("closing the store: %w", cerr))
		}
	}()
	if err := applyTubeLimits(ctx, q, tubeLimits); err != nil {
		return err
	}

	bl, hl, err := listen(o, token, tlsCfg)
	if err != nil {
		return err
	}
	// The listeners are closed on the way out unless serving began (the
	// servers then close them as they shut down).
	serving := false
	defer func() {
		if !serving {
			bl.Close()
			if hl != nil {
				hl.Close()
			}
		}
	}()

	metrics := httpapi.NewMetrics(nil)
	hashes, sweeper, err := openHashes(b, log, metrics)
	if err != nil {
		return err
	}
	observe := metrics.ObserveBeanstalk
	if log.Enabled(ctx, slog.LevelDebug) {
		bl = logListener{bl, log}
		observe = observeSlow(log, observe)
	}
	srv := &beanstalk.Server{Queue: q, Logger: log, MaxConns: o.maxConns, IdleTimeout: o.idleTimeout,
		BodyTimeout: o.bodyTimeoutOrNever(), MaxWaits: o.maxWaits, MaxWatch: o.maxWatch, Observe: observe, ConnState: metrics.BeanstalkConnState}
	hs, err := newHTTPServer(o, b, q, hashes, log, metrics, token, namedLimits)
	if err != nil {
		return err
	}
	schedules := hs.Schedules
	if err := startSweeper(sweeper, log); err != nil {
		return err
	}
	defer stopSweeper(sweeper, log) // before the store closes
	if o.schedulesFile != "" {
		if err = applySchedules(ctx, schedules, o.schedulesFile, fileSchedules, o.schedulesPrune, log); err != nil {
			return err
		}
	}
	stopSchedules := runSchedules(schedules)
	defer stopSchedules() // before the store closes
	var grpcLog *slog.Logger
	if o.accessLog {
		grpcLog = log.With("log", "access")
	}
	es, el, err := o.envoy.start(b, token, tlsCfg, metrics.Registry(), log, grpcLog, o.tracing.enabled())
	if err != nil {
		return err
	}
	hs.EnvoyDescriptors = envoyDescriptors(es)

	logServing(log, o, b, bl, hl, token != "", tlsCfg != nil, len(namedLimits))

	serving = true
	return c.run(ctx, o, log, drain, servers{bl: bl, hl: hl, el: el, beanstalk: srv, http: hs, envoy: es})
}

// newHTTPServer is serve's HTTP server over the back end's stores: the
// queue, the hashes (nil when the back end has none), a rate limiter,
// the locks and one client of the schedules, which serve also fires,
// counting the fires on the metrics.
func newHTTPServer(o serveOptions, b *hourglass.Backend, q *queue.Queue, hashes *ttlhash.Hashes, log *slog.Logger, metrics *httpapi.Metrics, token string, namedLimits map[string][]ratelimit.Limit) (*httpapi.Server, error) {
	limiter, err := ratelimit.New(b.Limits, nil)
	if err != nil {
		return nil, err
	}
	hs := &httpapi.Server{Queue: q, Hashes: hashes, Logger: log, AuthToken: token, MaxWait: o.maxWait, MaxWaits: o.maxWaits, MaxReserveTubes: o.maxWatch, Metrics: metrics, Health: healthCheck(b),
		Limiter: limiter, NamedLimits: namedLimits, AllowedHosts: o.hostList()}
	if hs.Locks, err = lock.New(b.Locks, nil); err != nil {
		return nil, err
	}
	hs.StoreKind = b.Kind
	hs.StoreFacts = storeFacts(b)
	// One client for the schedules' routes and for firing them, counting
	// the fires on the metrics.
	schedules, err := newSchedules(metrics.WatchSchedules(b.Schedules), log)
	if err != nil {
		return nil, err
	}
	hs.Schedules = schedules
	if o.accessLog {
		hs.AccessLog = log.With("log", "access")
	}
	if o.tracing.enabled() {
		hs.Wrap = wrapHTTP
	}
	return hs, nil
}

// listen opens serve's listeners: the beanstalkd protocol's and, with
// --http-addr, HTTP's (nil without), with TLS when it is set up. Without
// authentication it refuses a listener beyond loopback. On failure it
// closes what it opened.
func listen(o serveOptions, token string, tlsCfg *tls.Config) (bl, hl net.Listener, err error) {
	bl, err = net.Listen("tcp", o.beanstalkAddr)
	if err != nil {
		return nil, nil, fmt.Errorf("--addr: %w", err)
	}
	if o.httpAddr != "" {
		if hl, err = net.Listen("tcp", o.httpAddr); err != nil {
			bl.Close()
			return nil, nil, fmt.Errorf("--http-addr: %w", err)
		}
	}
	if !authenticated(token, tlsCfg) {
		for _, l := range []struct {
			flag string
			l    net.Listener
		}{{"--addr", bl}, {"--http-addr", hl}} {
			if l.l != nil && !loopback(l.l.Addr()) {
				bl.Close()
				if hl != nil {
					hl.Close()
				}
				return nil, nil, fmt.Errorf("%s %s is beyond loopback: refusing to serve it without --auth-token, --auth-token-file, HOURGLASS_AUTH_TOKEN or --tls-client-ca", l.flag, l.l.Addr())
			}
		}
	}
	if tlsCfg != nil {
		bl = tls.NewListener(bl, tlsCfg)
		if hl != nil {
			hl = tls.NewListener(hl, tlsCfg)
		}
	}
	return bl, hl, nil
}

// logServing says that serve serves, where and how, and warns of flags
// that do not apply and of listeners open to anyone.
func logServing(log *slog.Logger, o serveOptions, b *hourglass.Backend, bl, hl net.Listener, auth, withTLS bool, limits int) {
	attrs := []any{"store", b.Kind, "url", redact(o.store), "beanstalk_addr", bl.Addr().String()}
	if hl != nil {
		attrs = append(attrs, "http_addr", hl.Addr().String())
	}
	if b.Kind == "file" {
		attrs = append(attrs, "fsync", o.fsync)
	}
	attrs = append(attrs, "max_job_size", o.maxJobSize, "max_jobs", o.maxJobs, "max_conns", o.maxConns,
		"auth", auth, "tls", withTLS, "client_certs", o.tlsClientCA != "", "limits", limits, "pid", os.Getpid())
	log.Info("hourglass serving", attrs...)
	if o.fsyncSet && b.Kind != "file" {
		log.Warn("--fsync is ignored: it applies to the embedded engine on disk", "store", b.Kind)
	}
	if o.maxJobsSet && o.maxJobs > 0 && b.Kind == "redis" {
		log.Warn("--max-jobs is ignored on Redis: its maxmemory is the cap")
	}
	warnExposed(log, "beanstalk_addr", bl.Addr(), "the beanstalkd protocol has no authentication: anyone who can reach it can put, reserve and delete jobs")
	if hl != nil {
		warnExposed(log, "http_addr", hl.Addr(), "it needs the bearer token, which travels in clear text without --tls-cert")
	}
}

// servers are what serve runs: the beanstalkd protocol's server, and
// HTTP's and Envoy's when their listeners (hl, el) are set.
type servers struct {
	bl, hl, el net.Listener
	beanstalk  *beanstalk.Server
	http       *httpapi.Server
	envoy      *envoyrl.Server
}

// run serves until ctx ends or a server fails, putting the beanstalkd
// server in drain mode on a drain signal, then shuts the servers down
// within the shutdown timeout.
func (c *cli) run(ctx context.Context, o serveOptions, log *slog.Logger, drain <-chan os.Signal, sv servers) error {
	srv, hs, es, bl, hl, el := sv.beanstalk, sv.http, sv.envoy, sv.bl, sv.hl, sv.el
	var wg sync.WaitGroup
	failed := make(chan error, 3)
	wg.Go(func() {
		if err := srv.Serve(bl); !errors.Is(err, beanstalk.ErrServerClosed) {
			failed <- fmt.Errorf("serving the beanstalkd protocol: %w", err)
		}
	})
	if hl != nil {
		wg.Go(func() {
			if err := hs.Serve(hl); !errors.Is(err, httpapi.ErrServerClosed) {
				failed <- fmt.Errorf("serving HTTP: %w", err)
			}
		})
	}
	if es != nil {
		wg.Go(func() {
			if err := es.Serve(el); !errors.Is(err, envoyrl.ErrServerClosed) {
				failed <- fmt.Errorf("serving Envoy's rate limit service: %w", err)
			}
		})
	}

	var serveErr error
wait:
	for {
		select {
		case sig := <-drain:
			srv.Drain()
			log.Info("drain mode: refusing new jobs", "signal", sig.String())
		case <-ctx.Done():
			log.Info("shutting down", "cause", context.Cause(ctx).Error(), "timeout", o.shutdownTimeout)
			break wait
		case serveErr = <-failed:
			log.Error("shutting down", "err", serveErr)
			break wait
		}
	}
	if c.stopSignals != nil {
		c.stopSignals() // a second signal stops the process at once
	}

	sctx, cancel := context.WithTimeout(context.Background(), o.shutdownTimeout)
	defer cancel()
	var sdErr [2]error
	var sd sync.WaitGroup
	sd.Go(func() { sdErr[0] = srv.Shutdown(sctx) })
	if es != nil {
		sd.Go(func() { es.Shutdown(sctx) }) // ends the calls still open when sctx does
	}
	if hl != nil {
		sd.Go(func() { sdErr[1] = hs.Shutdown(sctx) })
	}
	sd.Wait()
	if errors.Is(sdErr[0], context.DeadlineExceeded) || errors.Is(sdErr[1], context.DeadlineExceeded) {
		log.Warn("shutdown timeout passed: closed the connections still open", "timeout", o.shutdownTimeout)
	}
	if hl != nil && sdErr[1] != nil {
		hs.Close()
	}
	wg.Wait()
	log.Info("stopped")
	return serveErr
}

// healthCheck is the check of GET /healthz: a cheap call to the store.
func healthCheck(b *hourglass.Backend) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		if b.Redis != nil {
			return b.Redis.Ping(ctx).Err()
		}
		_, err := b.Queue.Stats(ctx)
		return err
	}
}

// redisLogger sends go-redis's messages (failed dials and the like) to the
// server's log.
type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, args ...any) {
	l.log.WarnContext(ctx, fmt.Sprintf(format, args...))
}

// loopback reports whether a listener's address is a loopback address.
func loopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

// warnExposed logs a warning when a listener is not on a loopback address.
func warnExposed(log *slog.Logger, key string, a net.Addr, why string) {
	if ta, ok := a.(*net.TCPAddr); ok && ta.IP.IsLoopback() {
		return
	}
	log.Warn("listening on a non-loopback address; "+why, key, a.String())
}

// redact hides the password of a store URL: redis://user:secret@host
// becomes redis://user:xxxxx@host.
func redact(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw
	}
	authority := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority = rest[:i]
	}
	at := strings.LastIndexByte(authority, '@')
	if at < 0 {
		return raw
	}
	user, _, hasPass := strings.Cut(authority[:at], ":")
	if !hasPass {
		return raw
	}
	return scheme + "://" + user + ":xxxxx" + rest[at:]
}

// openError words a failure to open the store as what the user can do
// about it, keeping Go's chain for the cases it does not know.
func openError(store string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		switch {
		case errors.Is(err, fs.ErrPermission):
			return fmt.Errorf("cannot use the data directory %s: permission denied on %s (use --store to choose another)", store, pe.Path)
		case errors.Is(err, syscall.ENOTDIR) || errors.Is(err, fs.ErrExist):
			return fmt.Errorf("cannot use the data directory %s: %s is not a directory (use --store to choose another)", store, pe.Path)
		case errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("cannot create the data directory %s: %s does not exist and cannot be made (use --store to choose another)", store, pe.Path)
		case errors.Is(err, syscall.ENOSPC):
			return fmt.Errorf("cannot write to the data directory %s: no space left on the device", store)
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("store %s did not answer within %v: is it running and reachable? (%v)", redact(store), openTimeout, err)
	}
	return fmt.Errorf("opening store %s: %w", redact(store), err)
}

// newSchedules returns the client of the store's schedules, logging its
// fires.
func newSchedules(store schedule.Store, log *slog.Logger) (*schedule.Client, error) {
	return schedule.New(store, &schedule.Options{
		OnError: func(err error) { log.Warn("schedules: firing due ticks", "err", err) },
		OnFire: func(name string, f schedule.Fire) {
			log.Debug("schedules: fired", "schedule", name, "tick", f.Tick, "job", f.JobID, "lateness", f.Lateness)
		},
	})
}

// runSchedules fires the ticks of c's schedules while the server runs (any
// number of servers may: each tick is put once) and returns the function
// that stops it.
func runSchedules(c *schedule.Client) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = c.Run(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}
