package ttlhash

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/hourglass-io/hourglass/internal/tracing"
	"github.com/hourglass-io/hourglass/internal/wait"
)

// Options configure Hashes. Nil or the zero value means the defaults.
type Options struct {
	// VisibilityTimeout is how long an event handed to a consumer stays
	// its own: an event not acknowledged within it is handed to another
	// consumer of the group. Default 30s.
	VisibilityTimeout time.Duration
	// PollInterval is how often an idle consumer looks for events when the
	// store cannot wake it (is not a Notifier of TopicEvents). Default 1s.
	PollInterval time.Duration
	// Batch is how many events a consumer reads at a time. Default 64.
	Batch int
	// TracerProvider makes a span of each expiry event Consume hands to
	// its handler ("expired <hash>", docs/tracing.md); nil means
	// OpenTelemetry's global provider. While neither is set (or the
	// provider is a no-op one) no span is made.
	TracerProvider trace.TracerProvider
	// Clock is the time Consume and ReadWait read and wait on: their
	// until, visibility-timeout looks and polls. nil means the machine's;
	// a suite passes a manual clock (storetest.Clock) to drive time.
	Clock wait.Clock
}

func (o *Options) validate() error {
	if o == nil {
		return nil
	}
	if o.VisibilityTimeout < 0 {
		return invalid("Options.VisibilityTimeout", "%v: want 0 (default) or positive", o.VisibilityTimeout)
	}
	if o.PollInterval < 0 {
		return invalid("Options.PollInterval", "%v: want 0 (default) or positive", o.PollInterval)
	}
	if o.Batch < 0 || o.Batch > 10000 {
		return invalid("Options.Batch", "%d: want 0 (default) to 10000", o.Batch)
	}
	return nil
}

func (o *Options) visibility() time.Duration {
	if o == nil || o.VisibilityTimeout == 0 {
		return 30 * time.Second
	}
	return o.VisibilityTimeout
}

func (o *Options) poll() time.Duration {
	if o == nil || o.PollInterval == 0 {
		return time.Second
	}
	return o.PollInterval
}

func (o *Options) clock() wait.Clock {
	if o == nil {
		return wait.Real
	}
	return wait.Or(o.Clock)
}

func (o *Options) batch() int {
	if o == nil || o.Batch == 0 {
		return 64
	}
	return o.Batch
}

// Hashes is the user's view of a Store: hashes by name, and the consumers
// of expiry events. It is safe for concurrent use and holds no goroutine.
type Hashes struct {
	s     Store
	opts  Options
	trace *tracing.Source // the tracer of Options.TracerProvider

	gmu    sync.Mutex
	groups map[string]*groupConsumers // of the running Consume calls, by group
}

// New returns Hashes on s. It fails with ErrInvalid when opts are out of
// range.
func New(s Store, opts *Options) (*Hashes, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	h := &Hashes{s: s}
	if opts != nil {
		h.opts = *opts
	}
	h.trace = tracing.New(h.opts.TracerProvider)
	return h, nil
}

// Store returns the Store the Hashes use.
func (h *Hashes) Store() Store { return h.s }

// Hash returns the hash called name. It does not check the name: every
// method of the Hash does, returning ErrInvalidName.
func (h *Hashes) Hash(name string) *Hash { return &Hash{hs: h, name: name} }

// Hash is one hash of a Store, whose fields may each carry a TTL.
type Hash struct {
	hs   *Hashes
	name string
}

// Name returns the hash's name.
func (h *Hash) Name() string { return h.name }

func checkHash(name string) error {
	if name == "" || len(name) > MaxNameLen {
		return fmt.Errorf("%w: hash name of %d bytes (want 1 to %d)", ErrInvalidName, len(name), MaxNameLen)
	}
	return nil
}

func checkFields(fields []string) error {
	if len(fields) == 0 {
		return invalid("fields", "empty: name at least one field")
	}
	for _, f := range fields {
		if len(f) > MaxFieldLen {
			return fmt.Errorf("%w: field name of %d bytes (want at most %d)", ErrInvalidName, len(f), MaxFieldLen)
		}
	}
	return nil
}

func checkTTL(ttl time.Duration) error {
	if ttl <= 0 || ttl > MaxTTL {
		return invalid("ttl", "%v: want more than 0 and at most %v", ttl, MaxTTL)
	}
	if ttl%time.Millisecond != 0 {
		return invalid("ttl", "%v: want whole milliseconds", ttl)
	}
	return nil
}

func (h *Hash) set(ctx context.Context, req SetRequest) (int, error) {
	if err := checkHash(h.name); err != nil {
		return 0, err
	}
	if len(req.Fields) == 0 {
		return 0, invalid("fields", "empty: set at least one field")
	}
	for _, f := range req.Fields {
		if len(f.Name) > MaxFieldLen {
			return 0, fmt.Errorf("%w: field name of %d bytes (want at most %d)", ErrInvalidName, len(f.Name), MaxFieldLen)
		}
		if len(f.Value) > MaxValueLen {
			return 0, fmt.Errorf("%w: %d bytes (want at most %d)", ErrTooBig, len(f.Value), MaxValueLen)
		}
	}
	if req.TTL != 0 {
		if err := checkTTL(req.TTL); err != nil {
			return 0, err
		}
		req.KeepTTL = false
	}
	return h.hs.s.Set(ctx, h.name, req)
}

// Set stores one field without a TTL; a TTL the field had is cleared, as
// Redis's HSET does (SetKeepTTL keeps it). It reports whether the field
// is new.
func (h *Hash) Set(ctx context.Context, field string, value []byte) (bool, error) {
	n, err := h.set(ctx, SetRequest{Fields: []Field{{field, value}}})
	return n == 1, err
}

// SetKeepTTL stores one field, keeping the deadline it had, if any. It
// reports whether the field is new.
func (h *Hash) SetKeepTTL(ctx context.Context, field string, value []byte) (bool, error) {
	n, err := h.set(ctx, SetRequest{Fields: []Field{{field, value}}, KeepTTL: true})
	return n == 1, err
}

// SetTTL stores one field that expires ttl from now (whole milliseconds,
// up to MaxTTL). It reports whether the field is new.
func (h *Hash) SetTTL(ctx context.Context, field string, value []byte, ttl time.Duration) (bool, error) {
	if err := checkTTL(ttl); err != nil {
		return false, err
	}
	n, err := h.set(ctx, SetRequest{Fields: []Field{{field, value}}, TTL: ttl})
	return n == 1, err
}

// SetMany stores fields in one atomic operation, all with the TTL ttl
// (0: no TTL, clearing any) and returns how many are new.
func (h *Hash) SetMany(ctx context.Context, fields []Field, ttl time.Duration) (int, error) {
	return h.set(ctx, SetRequest{Fields: fields, TTL: ttl})
}

// Get returns the value of a live field, and false when it is missing or
// expired.
func (h *Hash) Get(ctx context.Context, field string) ([]byte, bool, error) {
	es, err := h.GetMany(ctx, field)
	if err != nil {
		return nil, false, err
	}
	if es[0] == nil {
		return nil, false, nil
	}
	return es[0].Value, true, nil
}

// GetMany returns the live entries of fields, in order, nil where a field
// is missing or expired.
func (h *Hash) GetMany(ctx context.Context, fields ...string) ([]*Entry, error) {
	if err := checkHash(h.name); err != nil {
		return nil, err
	}
	if err := checkFields(fields); err != nil {
		return nil, err
	}
	return h.hs.s.Get(ctx, h.name, fields)
}

// GetAll returns every live entry. For a large hash, Scan reads it in
// parts.
func (h *Hash) GetAll(ctx context.Context) ([]Entry, error) {
	if err := checkHash(h.name); err != nil {
		return nil, err
	}
	return h.hs.s.GetAll(ctx, h.name)
}

// Scan calls fn for every entry live throughout the iteration (at least
// once; an entry set or deleted meanwhile may or may not be seen), reading
// about count entries per store call, until fn returns false or an error.
func (h *Hash) Scan(ctx context.Context, count int, fn func(Entry) bool) error {
	if err := checkHash(h.name); err != nil {
		return err
	}
	if count < 1 {
		return invalid("count", "%d: want at least 1", count)
	}
	cursor := ""
	for {
		es, next, err := h.hs.s.Scan(ctx, h.name, cursor, count)
		if err != nil {
			return err
		}
		for _, e := range es {
			if !fn(e) {
				return nil
			}
		}
		if next == "" {
			return nil
		}
		cursor = next
	}
}

// Del deletes fields and returns how many were live.
func (h *Hash) Del(ctx context.Context, fields ...string) (int, error) {
	if err := checkHash(h.name); err != nil {
		return 0, err
	}
	if err := checkFields(fields); err != nil {
		return 0, err
	}
	return h.hs.s.Del(ctx, h.name, fields)
}

// Len counts the live fields.
func (h *Hash) Len(ctx context.Context) (int, error) {
	if err := checkHash(h.name); err != nil {
		return 0, err
	}
	return h.hs.s.Len(ctx, h.name)
}

// TTL returns, per field, the time left before its deadline, or NoField
// (-2ns) for a missing or expired field, or NoTTL (-1ns) for a field
// without a TTL, as Redis's HPTTL does.
func (h *Hash) TTL(ctx context.Context, fields ...string) ([]time.Duration, error) {
	if err := checkHash(h.name); err != nil {
		return nil, err
	}
	if err := checkFields(fields); err != nil {
		return nil, err
	}
	return h.hs.s.TTL(ctx, h.name, fields)
}

func checkCond(c Cond) error {
	if c < None || c > LT {
		return invalid("cond", "%d: want None, NX, XX, GT or LT", int(c))
	}
	return nil
}

// Expire gives fields the TTL ttl from now under cond, and returns a code
// per field as Redis's HEXPIRE does: NoField (-2), NotMet (0), Done (1),
// or Deleted (2) when ttl is 0: the field expires at once, with its event.
func (h *Hash) Expire(ctx context.Context, ttl time.Duration, cond Cond, fields ...string) ([]int, error) {
	if err := checkHash(h.name); err != nil {
		return nil, err
	}
	if err := checkFields(fields); err != nil {
		return nil, err
	}
	if ttl != 0 {
		if err := checkTTL(ttl); err != nil {
			return nil, err
		}
	}
	if err := checkCond(cond); err != nil {
		return nil, err
	}
	return h.hs.s.Expire(ctx, h.name, ExpireRequest{Fields: fields, TTL: ttl, Cond: cond})
}

// ExpireAt gives fields the deadline at (millisecond resolution) under
// cond, with the codes of Expire; a deadline now or past expires the
// fields at once (Deleted).
func (h *Hash) ExpireAt(ctx context.Context, at time.Time, cond Cond, fields ...string) ([]int, error) {
	if err := checkHash(h.name); err != nil {
		return nil, err
	}
	if err := checkFields(fields); err != nil {
		return nil, err
	}
	if at.UnixMilli() < 1 || time.Until(at) > MaxTTL {
		return nil, invalid("at", "%v: want after 1970 and at most MaxTTL from now", at)
	}
	if err := checkCond(cond); err != nil {
		return nil, err
	}
	return h.hs.s.Expire(ctx, h.name, ExpireRequest{Fields: fields, At: at, Cond: cond})
}

// Persist removes the TTL of fields and returns a code per field as
// Redis's HPERSIST does: NoField (-2), NoTTL (-1) or Done (1).
func (h *Hash) Persist(ctx context.Context, fields ...string) ([]int, error) {
	if err := checkHash(h.name); err != nil {
		return nil, err
	}
	if err := checkFields(fields); err != nil {
		return nil, err
	}
	return h.hs.s.Persist(ctx, h.name, fields)
}
