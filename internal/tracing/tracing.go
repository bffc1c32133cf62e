// Package tracing is how the primitives find their OpenTelemetry tracer:
// the TracerProvider of their options, or else the global one, and none at
// all while neither is set, so that a program without tracing pays nothing
// per call (no span, no context, no allocation); and the two things every
// primitive's spans do alike: mark a failure (Fail) and carry a duration in
// milliseconds (MS).
//
// A Source is made once per client (a Queue, a Limiter, a lock Client, …);
// its Tracer is asked on each call and is nil when tracing is off. With no
// provider in the options, the global provider is read on each call (one
// atomic load), so a program that installs one with
// otel.SetTracerProvider after making its clients is traced from then on.
package tracing

import (
	"fmt"
	"reflect"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Scope is the instrumentation scope of every span hourglass makes.
const Scope = "github.com/hourglass-io/hourglass"

// unset is the global provider before anyone sets one: OpenTelemetry's
// delegating placeholder, whose spans record nothing but still cost a
// context each. It is nil when a provider was already set before this
// package was initialised.
var unset = func() trace.TracerProvider {
	tp := otel.GetTracerProvider()
	if fmt.Sprintf("%T", tp) == "*global.tracerProvider" {
		return tp
	}
	return nil
}()

// Source gives the tracer of one client. The zero Source follows the
// global provider.
type Source struct {
	fixed  trace.Tracer // from an explicit provider; nil when it is a no-op one
	own    bool         // an explicit provider was given
	global atomic.Pointer[pair]
}

type pair struct {
	tp trace.TracerProvider
	tr trace.Tracer
}

// New returns the Source for a client with provider tp (nil: the global one).
func New(tp trace.TracerProvider) *Source {
	s := &Source{}
	s.Set(tp)
	return s
}

// Set makes tp (nil: the global one) the source's provider. It is for a
// client's constructor, before the client is used.
func (s *Source) Set(tp trace.TracerProvider) {
	s.own, s.fixed = false, nil
	if tp == nil {
		return
	}
	s.own = true
	if !off(tp) {
		s.fixed = tp.Tracer(Scope)
	}
}

// same reports whether a and b are one provider, without panicking on a
// provider of a type that cannot be compared.
func same(a, b trace.TracerProvider) bool {
	ta := reflect.TypeOf(a)
	return ta == reflect.TypeOf(b) && ta.Comparable() && a == b
}

func off(tp trace.TracerProvider) bool {
	switch tp.(type) {
	case noop.TracerProvider, *noop.TracerProvider:
		return true
	}
	return tp == unset
}

// Tracer returns the tracer to use now, or nil when tracing is off.
func (s *Source) Tracer() trace.Tracer {
	if s == nil {
		return nil
	}
	if s.own {
		return s.fixed
	}
	tp := otel.GetTracerProvider()
	if tp == unset {
		return nil
	}
	if p := s.global.Load(); p != nil && same(p.tp, tp) {
		return p.tr
	}
	if off(tp) {
		return nil
	}
	p := &pair{tp: tp, tr: tp.Tracer(Scope)}
	s.global.Store(p)
	return p.tr
}
