package main

import (
	"context"
	"log/slog"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/hourglass-io/hourglass/server/httpapi"
)

// grpcAccessLog returns the options that log each gRPC call at info level
// once it ends, as --access-log logs each HTTP request: the full method,
// the status code, the duration and the peer.
func grpcAccessLog(log *slog.Logger) []grpc.ServerOption {
	record := func(ctx context.Context, method string, start time.Time, err error) {
		remote := ""
		if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
			remote = p.Addr.String()
		}
		log.Info("grpc call", "method", method, "code", status.Code(err).String(),
			"duration_ms", httpapi.DurationMS(time.Since(start)), "remote", remote)
	}
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			start := time.Now()
			resp, err := h(ctx, req)
			record(ctx, info.FullMethod, start, err)
			return resp, err
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			start := time.Now()
			err := h(srv, ss)
			record(ss.Context(), info.FullMethod, start, err)
			return err
		}),
	}
}
