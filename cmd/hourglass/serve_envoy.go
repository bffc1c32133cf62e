package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"log/slog"
	"net"

	"github.com/hourglass-io/hourglass"
	"github.com/hourglass-io/hourglass/ratelimit"
	"github.com/hourglass-io/hourglass/server/envoyrl"
	"github.com/hourglass-io/hourglass/server/httpapi"
	"github.com/prometheus/client_golang/prometheus"
)

// envoyOptions are serve's flags for Envoy's rate limit service.
type envoyOptions struct {
	grpcAddr string
	config   string
	headers  bool
	failOpen bool
}

func (o *envoyOptions) flags(fs *flag.FlagSet) {
	fs.StringVar(&o.grpcAddr, "grpc-addr", "", "`host:port` to serve Envoy's rate limit service (gRPC) on; empty: none")
	fs.StringVar(&o.config, "ratelimit-config", "", "`path` of the Envoy rate limit configuration: a YAML file or a directory of them (with --grpc-addr)")
	fs.BoolVar(&o.headers, "ratelimit-response-headers", false, "add x-ratelimit-limit, -remaining and -reset to the Envoy service's answers")
	fs.BoolVar(&o.failOpen, "ratelimit-fail-open", false, "answer OK when the store fails (default: OVER_LIMIT)")
}

func (o *envoyOptions) validate() error {
	switch {
	case o.grpcAddr != "" && o.config == "":
		return usagef("--grpc-addr needs --ratelimit-config")
	case o.grpcAddr == "" && o.config != "":
		return usagef("--ratelimit-config needs --grpc-addr")
	}
	return nil
}

// start loads the configuration and listens, refusing an address beyond
// loopback without a token; it returns a nil server without --grpc-addr.
func (o *envoyOptions) start(b *hourglass.Backend, token string, tlsCfg *tls.Config, reg prometheus.Registerer, log, accessLog *slog.Logger, traced bool) (*envoyrl.Server, net.Listener, error) {
	if o.grpcAddr == "" {
		return nil, nil, nil
	}
	cfg, err := envoyrl.LoadConfig(o.config)
	if err != nil {
		return nil, nil, fmt.Errorf("--ratelimit-config: %w", err)
	}
	l, err := net.Listen("tcp", o.grpcAddr)
	if err != nil {
		return nil, nil, fmt.Errorf("--grpc-addr: %w", err)
	}
	if !authenticated(token, tlsCfg) && !loopback(l.Addr()) {
		l.Close()
		return nil, nil, fmt.Errorf("--grpc-addr %s is beyond loopback: refusing to serve it without --auth-token, --auth-token-file, HOURGLASS_AUTH_TOKEN or --tls-client-ca", l.Addr())
	}
	policy := ratelimit.FailClosed
	if o.failOpen {
		policy = ratelimit.FailOpen
	}
	limiter, err := ratelimit.New(b.Limits, &ratelimit.Options{Failure: policy})
	if err != nil {
		l.Close()
		return nil, nil, err
	}
	s := &envoyrl.Server{
		Limiter: limiter, Config: cfg,
		Metrics: envoyrl.NewMetrics(reg), Logger: log, AuthToken: token, TLSConfig: tlsCfg, ResponseHeaders: o.headers,
	}
	if accessLog != nil {
		s.ServerOptions = grpcAccessLog(accessLog)
	}
	if traced {
		s.ServerOptions = append(s.ServerOptions, grpcTracing()...)
	}
	warnExposed(log, "grpc_addr", l.Addr(), "it needs the bearer token, which travels in clear text without --tls-cert")
	log.Info("serving Envoy's rate limit service", "grpc_addr", l.Addr().String(), "config", o.config, "domains", len(cfg.Domains()), "fail_open", o.failOpen)
	return s, l, nil
}

// envoyDescriptors lists the Envoy service's descriptors for the
// dashboard's rate limit panel; nil without the service.
func envoyDescriptors(es *envoyrl.Server) func() []httpapi.EnvoyDescriptor {
	if es == nil {
		return nil
	}
	return func() []httpapi.EnvoyDescriptor {
		ds := es.Descriptors()
		out := make([]httpapi.EnvoyDescriptor, len(ds))
		for i, d := range ds {
			out[i] = httpapi.EnvoyDescriptor{Domain: d.Domain, Descriptor: d.Descriptor, Limit: d.Limit, Shadow: d.Shadow,
				TotalHits: d.TotalHits, OverLimit: d.OverLimit, NearLimit: d.NearLimit, ShadowMode: d.ShadowMode}
		}
		return out
	}
}
