package httpapi

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/hourglass-io/hourglass/ttlhash"
)

// hashesPrimitive serves the expiring hash fields (package ttlhash) under
// /v1/hashes and their expiry events under /v1/hash-groups.
var hashesPrimitive = primitive{
	name:    "hashes",
	pkg:     "ttlhash",
	enabled: func(s *Server) bool { return s.Hashes != nil },
	routes: func(s *Server) []route {
		s.hashMetrics() // registered with the routes, so that they show before any traffic
		return []route{
			{"POST", "/v1/hashes/{hash}/fields", "hset", s.hashSet},
			{"GET", "/v1/hashes/{hash}/fields", "hget", s.hashGet},
			{"DELETE", "/v1/hashes/{hash}/fields", "hdel", s.hashDel},
			{"GET", "/v1/hashes/{hash}", "hlen", s.hashLen},
			{"GET", "/v1/hashes/{hash}/scan", "hscan", s.hashScan},
			{"GET", "/v1/hashes/{hash}/ttl", "httl", s.hashTTL},
			{"POST", "/v1/hashes/{hash}/expire", "hexpire", s.hashExpire},
			{"POST", "/v1/hashes/{hash}/persist", "hpersist", s.hashPersist},
			{"GET", "/v1/hash-groups", "hevent-stats", s.hashEventStats},
			{"POST", "/v1/hash-groups/{group}", "hgroup-create", s.hashGroupCreate},
			{"DELETE", "/v1/hash-groups/{group}", "hgroup-delete", s.hashGroupDelete},
			{"POST", "/v1/hash-groups/{group}/read", "hevent-read", s.hashRead},
			{"POST", "/v1/hash-groups/{group}/ack", "hevent-ack", s.hashAck},
		}
	},
	panel: hashesPanel,
}

// maxHashBody bounds the JSON body of a set: values travel in base64 (4
// bytes per 3) or as escaped text.
const maxHashBody = 16 << 20

// Bounds of the calls on hashes.
const (
	// MaxHashFields is the most fields one call names or sets.
	MaxHashFields = 10000
	// MaxEventsRead is the most events one read hands out.
	MaxEventsRead = 1000
	// maxScanCount bounds a scan's count hint.
	maxScanCount = 10000
)

// SetFieldsRequest is the JSON body of a set: fields stored in one atomic
// operation, all with the same expiry. At most one of TTLMS, At and
// KeepTTL; none of them stores the fields without a TTL (clearing any).
type SetFieldsRequest struct {
	Fields []SetField `json:"fields"`
	// TTLMS gives every field this TTL, in milliseconds.
	TTLMS int64 `json:"ttl_ms,omitempty"`
	// At gives every field this deadline (RFC 3339, millisecond
	// resolution, compared with the store's clock).
	At *time.Time `json:"at,omitempty"`
	// KeepTTL keeps the deadline of a field that has one.
	KeepTTL bool `json:"keep_ttl,omitempty"`
}

// SetField is a field to store: its value as text in Value or as base64
// in ValueBase64 (exactly one).
type SetField struct {
	Name        string  `json:"name"`
	Value       *string `json:"value,omitempty"`
	ValueBase64 *string `json:"value_base64,omitempty"`
}

// SetFieldsReply is the reply to a set.
type SetFieldsReply struct {
	// Added counts the fields that were not live before.
	Added int `json:"added"`
}

// HashEntry is a live field in a reply.
type HashEntry struct {
	Name string `json:"name"`
	// ValueBase64 is the value, base64 (standard, padded): always there.
	ValueBase64 string `json:"value_base64"`
	// Value is the value as a string when it is valid UTF-8.
	Value *string `json:"value,omitempty"`
	// Deadline is when the field expires; absent without a TTL.
	Deadline *time.Time `json:"deadline,omitempty"`
}

func entryOf(e ttlhash.Entry) HashEntry {
	out := HashEntry{Name: e.Name, ValueBase64: base64.StdEncoding.EncodeToString(e.Value)}
	if utf8.Valid(e.Value) {
		v := string(e.Value)
		out.Value = &v
	}
	if !e.Deadline.IsZero() {
		d := e.Deadline.UTC()
		out.Deadline = &d
	}
	return out
}

// GetFieldsReply is the reply to a get: the live fields asked for (every
// live field when none was named), and the names asked for that are
// missing or expired.
type GetFieldsReply struct {
	Fields  []HashEntry `json:"fields"`
	Missing []string    `json:"missing,omitempty"`
}

// DelFieldsReply is the reply to a delete of fields.
type DelFieldsReply struct {
	// Deleted counts the fields that were live.
	Deleted int `json:"deleted"`
}

// HashLenReply is the reply to a hash's length.
type HashLenReply struct {
	Hash string `json:"hash"`
	// Len counts the live fields.
	Len int `json:"len"`
}

// ScanReply is a page of a hash's live fields.
type ScanReply struct {
	Fields []HashEntry `json:"fields"`
	// Cursor continues the scan; "" when it is done.
	Cursor string `json:"cursor"`
}

// FieldTTL is the TTL of one field: TTLMS is the milliseconds left, or -2
// for a missing or expired field, -1 for a field without a TTL (as
// Redis's HPTTL).
type FieldTTL struct {
	Name  string `json:"name"`
	TTLMS int64  `json:"ttl_ms"`
}

// TTLReply is the reply to a TTL, in the order of the fields asked for.
type TTLReply struct {
	Fields []FieldTTL `json:"fields"`
}

// ExpireRequest is the JSON body of an expire: TTLMS (0 expires the fields
// at once) or At, under Cond ("", "NX", "XX", "GT" or "LT").
type ExpireRequest struct {
	Fields []string   `json:"fields"`
	TTLMS  *int64     `json:"ttl_ms,omitempty"`
	At     *time.Time `json:"at,omitempty"`
	Cond   string     `json:"cond,omitempty"`
}

// PersistRequest is the JSON body of a persist.
type PersistRequest struct {
	Fields []string `json:"fields"`
}

// FieldCode is the result of an expire or a persist for one field, with
// Redis 7.4's codes: -2 no such field, -1 no TTL (persist), 0 condition not
// met (expire), 1 done, 2 expired at once (expire).
type FieldCode struct {
	Name string `json:"name"`
	Code int    `json:"code"`
}

// CodesReply is the reply to an expire or a persist, in the order of the
// fields asked for.
type CodesReply struct {
	Fields []FieldCode `json:"fields"`
}

// ReadEventsRequest is the JSON body of a read of expiry events.
type ReadEventsRequest struct {
	// Consumer is the group's consumer the events are handed to.
	Consumer string `json:"consumer"`
	// Max is the most events to return: 1 to MaxEventsRead, default 10.
	Max int `json:"max,omitempty"`
	// TimeoutMS is how long to wait for a first event: 0 does not wait.
	// It is cut to the server's maximum wait.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
}

// HashEvent is the expiry of one field.
type HashEvent struct {
	// ID is what an ack names.
	ID    string `json:"id"`
	Hash  string `json:"hash"`
	Field string `json:"field"`
	// ValueBase64 is the value the field held, base64; Value the same as
	// a string when it is valid UTF-8.
	ValueBase64 string  `json:"value_base64"`
	Value       *string `json:"value,omitempty"`
	// Deadline is the field's deadline; ExpiredAt when the store removed
	// it (both by the store's clock).
	Deadline  time.Time `json:"deadline"`
	ExpiredAt time.Time `json:"expired_at"`
	// Redelivered: the event was handed out before and not acknowledged
	// within the visibility timeout.
	Redelivered bool `json:"redelivered"`
}

func eventOf(e ttlhash.Event) HashEvent {
	out := HashEvent{ID: e.ID, Hash: e.Hash, Field: e.Field, ValueBase64: base64.StdEncoding.EncodeToString(e.Value),
		Deadline: e.Deadline.UTC(), ExpiredAt: e.ExpiredAt.UTC(), Redelivered: e.Redelivered}
	if utf8.Valid(e.Value) {
		v := string(e.Value)
		out.Value = &v
	}
	return out
}

// EventsReply is the reply to a read: the events, possibly none.
type EventsReply struct {
	Events []HashEvent `json:"events"`
}

// AckRequest is the JSON body of an ack.
type AckRequest struct {
	IDs []string `json:"ids"`
}

// AckReply is the reply to an ack.
type AckReply struct {
	// Acked counts the events that were pending.
	Acked int `json:"acked"`
}

// EventStatsReply describes the expiry events the store keeps.
type EventStatsReply struct {
	// Retained counts the events kept; Dropped those removed by the
	// store's cap before every group had acknowledged them.
	Retained int64        `json:"retained"`
	Dropped  int64        `json:"dropped"`
	Groups   []GroupStats `json:"groups"`
}

// GroupStats describes a consumer group.
type GroupStats struct {
	Name string `json:"name"`
	// Pending counts the events handed out and not yet acknowledged.
	Pending int64 `json:"pending"`
}

// hash returns the Hash of the request's path, noting it for the panel.
func (s *Server) hash(r *http.Request) *ttlhash.Hash {
	name := r.PathValue("hash")
	if name != "" && len(name) <= ttlhash.MaxNameLen {
		s.hx.touched.note(name)
	}
	return s.Hashes.Hash(name)
}

// queryFields returns the repeated "field" parameters of r.
func queryFields(r *http.Request, required bool) ([]string, error) {
	fs := r.URL.Query()["field"]
	if required && len(fs) == 0 {
		return nil, badRequest("name at least one field (?field=…)")
	}
	for _, f := range fs {
		if !utf8.ValidString(f) {
			return nil, badRequest("field %q is not valid UTF-8", f)
		}
	}
	return fs, checkFieldCount(fs)
}

func checkFieldCount[T any](fs []T) error {
	if len(fs) > MaxHashFields {
		return badRequest("%d fields: want at most %d", len(fs), MaxHashFields)
	}
	return nil
}

func (s *Server) hashSet(w http.ResponseWriter, r *http.Request) error {
	var req SetFieldsRequest
	if err := readJSON(w, r, maxHashBody, &req); err != nil {
		return err
	}
	if err := checkFieldCount(req.Fields); err != nil {
		return err
	}
	n := 0
	if req.TTLMS != 0 {
		n++
	}
	if req.At != nil {
		n++
	}
	if req.KeepTTL {
		n++
	}
	if n > 1 {
		return badRequest("give at most one of ttl_ms, at and keep_ttl")
	}
	if req.TTLMS < 0 || req.TTLMS > ttlhash.MaxTTL.Milliseconds() {
		return badField("ttl_ms", "is %d, want 1 to %d (milliseconds; 0 or none: no TTL)", req.TTLMS, ttlhash.MaxTTL.Milliseconds())
	}
	fields := make([]ttlhash.Field, len(req.Fields))
	for i, f := range req.Fields {
		if !utf8.ValidString(f.Name) {
			return badRequest("field %d: the name is not valid UTF-8", i)
		}
		switch {
		case (f.Value == nil) == (f.ValueBase64 == nil):
			return badRequest("field %q: give value or value_base64, not both nor neither", f.Name)
		case f.ValueBase64 != nil:
			b, err := base64.StdEncoding.DecodeString(*f.ValueBase64)
			if err != nil {
				return badRequest("field %q: value_base64: %v", f.Name, err)
			}
			fields[i] = ttlhash.Field{Name: f.Name, Value: b}
		default:
			fields[i] = ttlhash.Field{Name: f.Name, Value: []byte(*f.Value)}
		}
	}
	h := s.hash(r)
	var added int
	var err error
	switch {
	case req.At != nil:
		// The fields are stored with the TTL the deadline is from here,
		// then given the deadline itself against the store's clock: at
		// no moment do they lack a TTL.
		ttl := time.Until(*req.At).Truncate(time.Millisecond) + time.Millisecond
		if !req.At.After(time.Now()) {
			return badRequest("at %v is past", req.At.UTC())
		}
		added, err = h.SetMany(r.Context(), fields, ttl)
		if err == nil {
			_, err = h.ExpireAt(r.Context(), *req.At, ttlhash.None, namesOf(fields)...)
		}
	case req.KeepTTL:
		added, err = s.setKeepTTL(r.Context(), h, fields)
	default:
		added, err = h.SetMany(r.Context(), fields, ms(req.TTLMS))
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, SetFieldsReply{Added: added})
	return nil
}

// setKeepTTL stores fields keeping their deadlines, in one atomic
// operation. Hash has no many-field form of SetKeepTTL: the call goes to
// the store, after the checks Hash makes.
func (s *Server) setKeepTTL(ctx context.Context, h *ttlhash.Hash, fields []ttlhash.Field) (int, error) {
	if err := checkHashName(h.Name()); err != nil {
		return 0, err
	}
	if len(fields) == 0 {
		return 0, badField("fields", "is empty: set at least one field")
	}
	for _, f := range fields {
		if len(f.Name) > ttlhash.MaxFieldLen {
			return 0, fmt.Errorf("%w: field name of %d bytes (want at most %d)", ttlhash.ErrInvalidName, len(f.Name), ttlhash.MaxFieldLen)
		}
		if len(f.Value) > ttlhash.MaxValueLen {
			return 0, fmt.Errorf("%w: %d bytes (want at most %d)", ttlhash.ErrTooBig, len(f.Value), ttlhash.MaxValueLen)
		}
	}
	return s.Hashes.Store().Set(ctx, h.Name(), ttlhash.SetRequest{Fields: fields, KeepTTL: true})
}

func namesOf(fs []ttlhash.Field) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Name
	}
	return out
}

func (s *Server) hashGet(w http.ResponseWriter, r *http.Request) error {
	names, err := queryFields(r, false)
	if err != nil {
		return err
	}
	h := s.hash(r)
	reply := GetFieldsReply{Fields: []HashEntry{}}
	if len(names) == 0 {
		es, err := h.GetAll(r.Context())
		if err != nil {
			return err
		}
		for _, e := range es {
			reply.Fields = append(reply.Fields, entryOf(e))
		}
	} else {
		es, err := h.GetMany(r.Context(), names...)
		if err != nil {
			return err
		}
		for i, e := range es {
			if e == nil {
				reply.Missing = append(reply.Missing, names[i])
				continue
			}
			reply.Fields = append(reply.Fields, entryOf(*e))
		}
	}
	writeJSON(w, http.StatusOK, reply)
	return nil
}

func (s *Server) hashDel(w http.ResponseWriter, r *http.Request) error {
	names, err := queryFields(r, true)
	if err != nil {
		return err
	}
	n, err := s.hash(r).Del(r.Context(), names...)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, DelFieldsReply{Deleted: n})
	return nil
}

func (s *Server) hashLen(w http.ResponseWriter, r *http.Request) error {
	h := s.hash(r)
	n, err := h.Len(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, HashLenReply{Hash: h.Name(), Len: n})
	return nil
}

func (s *Server) hashScan(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	count := 100
	if v := q.Get("count"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxScanCount {
			return badField("count", "%q: want 1 to %d", v, maxScanCount)
		}
		count = n
	}
	h := s.hash(r)
	if err := checkHashName(h.Name()); err != nil {
		return err
	}
	if err := ttlhash.CheckCursor(q.Get("cursor")); err != nil {
		return err
	}
	es, next, err := s.Hashes.Store().Scan(r.Context(), h.Name(), q.Get("cursor"), count)
	if err != nil {
		return err
	}
	reply := ScanReply{Fields: make([]HashEntry, 0, len(es)), Cursor: next}
	for _, e := range es {
		reply.Fields = append(reply.Fields, entryOf(e))
	}
	writeJSON(w, http.StatusOK, reply)
	return nil
}

// checkHashName refuses what Hash's methods refuse, for the calls that go
// to the store directly (a page of a scan).
func checkHashName(name string) error {
	if name == "" || len(name) > ttlhash.MaxNameLen {
		return fmt.Errorf("%w: hash name of %d bytes (want 1 to %d)", ttlhash.ErrInvalidName, len(name), ttlhash.MaxNameLen)
	}
	return nil
}

func (s *Server) hashTTL(w http.ResponseWriter, r *http.Request) error {
	names, err := queryFields(r, true)
	if err != nil {
		return err
	}
	ttls, err := s.hash(r).TTL(r.Context(), names...)
	if err != nil {
		return err
	}
	reply := TTLReply{Fields: make([]FieldTTL, len(names))}
	for i, d := range ttls {
		t := d.Milliseconds()
		switch d {
		case ttlhash.NoField:
			t = ttlhash.NoField
		case ttlhash.NoTTL:
			t = ttlhash.NoTTL
		}
		reply.Fields[i] = FieldTTL{Name: names[i], TTLMS: t}
	}
	writeJSON(w, http.StatusOK, reply)
	return nil
}

func parseCond(c string) (ttlhash.Cond, error) {
	switch c {
	case "", "none", "NONE":
		return ttlhash.None, nil
	case "NX", "nx":
		return ttlhash.NX, nil
	case "XX", "xx":
		return ttlhash.XX, nil
	case "GT", "gt":
		return ttlhash.GT, nil
	case "LT", "lt":
		return ttlhash.LT, nil
	}
	return 0, badField("cond", "%q: want NX, XX, GT, LT or none", c)
}

func codesOf(names []string, codes []int) CodesReply {
	out := CodesReply{Fields: make([]FieldCode, len(names))}
	for i, c := range codes {
		out.Fields[i] = FieldCode{Name: names[i], Code: c}
	}
	return out
}

func (s *Server) hashExpire(w http.ResponseWriter, r *http.Request) error {
	var req ExpireRequest
	if err := readJSON(w, r, maxSmallBody*16, &req); err != nil {
		return err
	}
	if err := checkFieldCount(req.Fields); err != nil {
		return err
	}
	cond, err := parseCond(req.Cond)
	if err != nil {
		return err
	}
	h := s.hash(r)
	var codes []int
	switch {
	case (req.TTLMS == nil) == (req.At == nil):
		return badRequest("give ttl_ms or at, not both nor neither")
	case req.At != nil:
		codes, err = h.ExpireAt(r.Context(), *req.At, cond, req.Fields...)
	default:
		if *req.TTLMS < 0 || *req.TTLMS > ttlhash.MaxTTL.Milliseconds() {
			return badField("ttl_ms", "is %d, want 0 (expire now) to %d (milliseconds)", *req.TTLMS, ttlhash.MaxTTL.Milliseconds())
		}
		codes, err = h.Expire(r.Context(), ms(*req.TTLMS), cond, req.Fields...)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, codesOf(req.Fields, codes))
	return nil
}

func (s *Server) hashPersist(w http.ResponseWriter, r *http.Request) error {
	var req PersistRequest
	if err := readJSON(w, r, maxSmallBody*16, &req); err != nil {
		return err
	}
	if err := checkFieldCount(req.Fields); err != nil {
		return err
	}
	codes, err := s.hash(r).Persist(r.Context(), req.Fields...)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, codesOf(req.Fields, codes))
	return nil
}

func (s *Server) hashGroupCreate(w http.ResponseWriter, r *http.Request) error {
	return noContent(w, s.Hashes.CreateGroup(r.Context(), r.PathValue("group")))
}

func (s *Server) hashGroupDelete(w http.ResponseWriter, r *http.Request) error {
	return noContent(w, s.Hashes.DeleteGroup(r.Context(), r.PathValue("group")))
}

// hashRead hands out events of a group: a long poll of up to timeout_ms
// (cut to MaxWait) for a first event.
func (s *Server) hashRead(w http.ResponseWriter, r *http.Request) error {
	var req ReadEventsRequest
	if err := readJSON(w, r, maxSmallBody, &req); err != nil {
		return err
	}
	if req.Max == 0 {
		req.Max = 10
	}
	if req.Max < 1 || req.Max > MaxEventsRead {
		return badField("max", "is %d, want 1 to %d", req.Max, MaxEventsRead)
	}
	if req.TimeoutMS < 0 {
		return badField("timeout_ms", "is %d, want 0 or more", req.TimeoutMS)
	}
	group := r.PathValue("group")
	deadline := time.Now().Add(min(ms(req.TimeoutMS), s.maxWait()))
	ctx, done, err := s.longPoll(r, req.TimeoutMS > 0)
	if err != nil {
		return err
	}
	defer done()
	evs, err := s.Hashes.ReadWait(ctx, group, req.Consumer, req.Max, deadline)
	if err != nil {
		return s.pollErr(r, err)
	}
	reply := EventsReply{Events: make([]HashEvent, len(evs))}
	for i, e := range evs {
		reply.Events[i] = eventOf(e)
	}
	writeJSON(w, http.StatusOK, reply)
	s.hashMetrics().delivered(evs)
	return nil
}

func (s *Server) hashAck(w http.ResponseWriter, r *http.Request) error {
	var req AckRequest
	if err := readJSON(w, r, maxSmallBody*16, &req); err != nil {
		return err
	}
	if len(req.IDs) == 0 {
		return badField("ids", "is empty: name at least one event")
	}
	if len(req.IDs) > MaxEventsRead {
		return badRequest("%d ids: want at most %d", len(req.IDs), MaxEventsRead)
	}
	n, err := s.Hashes.Ack(r.Context(), r.PathValue("group"), req.IDs...)
	if err != nil {
		return err
	}
	s.hashMetrics().acked.Add(float64(n))
	writeJSON(w, http.StatusOK, AckReply{Acked: n})
	return nil
}

func (s *Server) hashEventStats(w http.ResponseWriter, r *http.Request) error {
	st, err := s.Hashes.EventStats(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, eventStatsOf(st))
	return nil
}

func eventStatsOf(st ttlhash.EventStats) EventStatsReply {
	out := EventStatsReply{Retained: st.Retained, Dropped: st.Dropped, Groups: make([]GroupStats, len(st.Groups))}
	for i, g := range st.Groups {
		out.Groups[i] = GroupStats{Name: g.Name, Pending: g.Pending}
	}
	return out
}
