package envoyrl

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/hourglass-io/hourglass/ratelimit"
	"gopkg.in/yaml.v3"
)

// ErrConfig is wrapped by every error about a configuration file. The
// error's text names the file and the line.
var ErrConfig = errors.New("envoyrl: bad configuration")

// rule is one compiled descriptor node of a domain's tree.
type rule struct {
	key, value     string                             // value "" matches any value; a trailing * matches a prefix
	wildcard       bool                               // value ends in *: value holds the prefix
	limited        bool                               // a rate_limit that is not unlimited
	limit          *ratelimit.Limit                   // nil for unlimited, or for requests_per_unit 0
	limits         []ratelimit.Limit                  // limit, alone: the Limiter's argument, built once
	pb             *rlsv3.RateLimitResponse_RateLimit // the limit as answers state it
	period         time.Duration                      // the limit's period
	unlimited      bool
	shadow         bool
	quota          bool // quota_mode: over the limit answers OK, flagged
	detailed       bool
	valueToMetric  bool
	shareThreshold bool     // a wildcard whose values share one counter
	name           string   // rate_limit.name, for replaces
	replaces       []string // names this limit replaces
	statKey        string   // key or key_value, as the metrics name it
	children       []*rule
	file           string
	line           int
}

// rules is a compiled configuration: domain name to its top descriptors.
type rules struct {
	domains map[string][]*rule
	hash    [32]byte // of the files' names and contents
}

// Config is a configuration in envoyproxy/ratelimit's YAML format, loaded
// from a file or from every .yaml and .yml file of a directory (one domain
// each). Reload reads it again and swaps the compiled rules in one atomic
// step, so requests in flight keep the rules they started with and none is
// dropped; a bad configuration is refused and the old one stays in force.
// A Config is safe for concurrent use.
type Config struct {
	path string
	cur  atomic.Pointer[rules]
	gen  atomic.Uint64

	mu sync.Mutex // serialises Reload
}

// LoadConfig loads the configuration at path (a file or a directory).
// Errors wrap ErrConfig and name the file and line, or are the file
// system's.
func LoadConfig(path string) (*Config, error) {
	c := &Config{path: path}
	if _, err := c.Reload(); err != nil {
		return nil, err
	}
	return c, nil
}

// Path is the file or directory the Config was loaded from.
func (c *Config) Path() string { return c.path }

// Generation counts the configurations put in force: 1 after LoadConfig,
// one more for each Reload that found a change.
func (c *Config) Generation() uint64 { return c.gen.Load() }

// Domains lists the configured domains, sorted.
func (c *Config) Domains() []string {
	r := c.cur.Load()
	return slices.Sorted(maps.Keys(r.domains))
}

// Reload reads the configuration again. When the files are unchanged it
// does nothing and returns false; when they changed and are valid it puts
// them in force and returns true; when they are invalid it returns the
// error and the configuration in force stays.
func (c *Config) Reload() (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	files, err := configFiles(c.path)
	if err != nil {
		return false, err
	}
	h := sha256.New()
	contents := make([][]byte, len(files))
	for i, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return false, err
		}
		contents[i] = b
		fmt.Fprintf(h, "%d:%s%d:", len(f), f, len(b))
		h.Write(b)
	}
	var sum [32]byte
	h.Sum(sum[:0])
	if old := c.cur.Load(); old != nil && old.hash == sum {
		return false, nil
	}
	r := &rules{domains: map[string][]*rule{}, hash: sum}
	where := map[string]string{}
	for i, f := range files {
		domain, line, top, err := parseFile(f, contents[i])
		if err != nil {
			return false, err
		}
		if prev, ok := where[domain]; ok {
			return false, fmt.Errorf("%w: %s:%d: domain %q is also configured in %s", ErrConfig, f, line, domain, prev)
		}
		where[domain] = fmt.Sprintf("%s:%d", f, line)
		r.domains[domain] = top
	}
	c.cur.Store(r)
	c.gen.Add(1)
	return true, nil
}

// configFiles lists the files of a configuration path: the path itself,
// or the .yaml and .yml files of a directory, sorted.
func configFiles(path string) ([]string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return []string{path}, nil
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		ext := filepath.Ext(e.Name())
		if e.Type().IsRegular() && (ext == ".yaml" || ext == ".yml") && !strings.HasPrefix(e.Name(), ".") {
			out = append(out, filepath.Join(path, e.Name()))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s: no .yaml or .yml file in the directory", ErrConfig, path)
	}
	return out, nil
}

// parser turns one file's YAML nodes into rules, with errors naming the
// file, the line and the field.
type parser struct {
	file string
}

func (p *parser) errf(n *yaml.Node, format string, args ...any) error {
	return fmt.Errorf("%w: %s:%d: %s", ErrConfig, p.file, n.Line, fmt.Sprintf(format, args...))
}

// formatKeys are the fields of envoyproxy/ratelimit's format. As there, a
// field of the format is accepted at any level (and ignored where it means
// nothing); any other field is refused.
var formatKeys = map[string]bool{
	"domain": true, "key": true, "value": true, "descriptors": true, "rate_limit": true,
	"unit": true, "requests_per_unit": true, "unlimited": true, "shadow_mode": true,
	"quota_mode": true, "name": true, "replaces": true, "detailed_metric": true,
	"value_to_metric": true, "share_threshold": true,
}

// extensionKeys are hourglass's extensions, inside rate_limit only.
var extensionKeys = map[string]bool{"algorithm": true, "per": true, "burst": true}

// checkKeys refuses a field that is neither the format's nor, inside
// rate_limit, an extension, and a list holding anything but mappings.
func (p *parser) checkKeys(n *yaml.Node, inRateLimit bool) error {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
				return p.errf(k, "a field name must be a string, got %q", k.Value)
			}
			if !formatKeys[k.Value] && !(inRateLimit && extensionKeys[k.Value]) {
				return p.errf(k, "unknown field %q", k.Value)
			}
			if err := p.checkKeys(v, k.Value == "rate_limit"); err != nil {
				return err
			}
		}
	case yaml.SequenceNode:
		for _, e := range n.Content {
			if e.Kind != yaml.MappingNode {
				return p.errf(e, "a list of this format holds mappings, got %q", e.Value)
			}
			if err := p.checkKeys(e, false); err != nil {
				return err
			}
		}
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str", "!!int", "!!bool", "!!null":
		default:
			return p.errf(n, "value %q: want a string, a whole number or true/false", n.Value)
		}
	case yaml.AliasNode:
		return p.checkKeys(n.Alias, inRateLimit)
	}
	return nil
}

func parseFile(file string, b []byte) (domain string, line int, top []*rule, err error) {
	p := &parser{file: file}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return "", 0, nil, fmt.Errorf("%w: %s: %w", ErrConfig, file, err)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 || doc.Content[0].ShortTag() == "!!null" {
		return "", 1, nil, fmt.Errorf("%w: %s:1: domain is missing or empty", ErrConfig, file)
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return "", 1, nil, p.errf(root, "want a mapping with domain and descriptors")
	}
	if err := p.checkKeys(root, false); err != nil {
		return "", 0, nil, err
	}
	var descs *yaml.Node
	for i := 0; i < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch k.Value {
		case "domain":
			if domain, err = p.str(k, v); err != nil {
				return "", 0, nil, err
			}
			line = k.Line
		case "descriptors":
			descs = v
		}
	}
	if domain == "" {
		return "", 0, nil, p.errf(root, "domain is missing or empty")
	}
	if top, err = p.descriptors(descs, ""); err != nil {
		return "", 0, nil, err
	}
	return domain, line, top, nil
}

// str is a scalar field's text ("" for null).
func (p *parser) str(k, n *yaml.Node) (string, error) {
	if n.Kind != yaml.ScalarNode {
		return "", p.errf(n, "%s: want a string", k.Value)
	}
	if n.ShortTag() == "!!null" {
		return "", nil
	}
	return n.Value, nil
}

func (p *parser) boolean(k, n *yaml.Node) (bool, error) {
	var b bool
	if n.Kind != yaml.ScalarNode || n.Decode(&b) != nil {
		return false, p.errf(n, "%s: want true or false, got %q", k.Value, n.Value)
	}
	return b, nil
}

// uint32 is a whole number from 0 to 4294967295 (null is 0).
func (p *parser) uint32(k, n *yaml.Node) (uint32, error) {
	var v uint32
	if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!int" && n.ShortTag() != "!!null") || n.Decode(&v) != nil {
		return 0, p.errf(n, "%s: want a whole number from 0 to 4294967295, got %q", k.Value, n.Value)
	}
	return v, nil
}

func (p *parser) descriptors(n *yaml.Node, parent string) ([]*rule, error) {
	if n == nil || n.ShortTag() == "!!null" {
		return nil, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, p.errf(n, "descriptors: want a list")
	}
	var out []*rule
	seen := map[string]int{}
	for _, d := range n.Content {
		r, err := p.descriptor(d, parent)
		if err != nil {
			return nil, err
		}
		// As envoyproxy/ratelimit names a descriptor: key, or key_value.
		id := r.key
		if r.value != "" || r.wildcard {
			id += "_" + r.value
			if r.wildcard {
				id += "*"
			}
		}
		if prev, ok := seen[id]; ok {
			return nil, p.errf(d, "descriptor key %q value %q is also at line %d", r.key, r.value, prev)
		}
		seen[id] = d.Line
		out = append(out, r)
	}
	return out, nil
}

func (p *parser) descriptor(n *yaml.Node, parent string) (*rule, error) {
	r := &rule{file: p.file, line: n.Line}
	var rl, kids *yaml.Node
	var err error
	for i := 0; i < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch k.Value {
		case "key":
			r.key, err = p.str(k, v)
		case "value":
			r.value, err = p.str(k, v)
		case "rate_limit":
			if v.ShortTag() != "!!null" {
				rl = v
			}
		case "descriptors":
			kids = v
		case "shadow_mode":
			r.shadow, err = p.boolean(k, v)
		case "quota_mode":
			r.quota, err = p.boolean(k, v)
		case "detailed_metric":
			r.detailed, err = p.boolean(k, v)
		case "value_to_metric":
			r.valueToMetric, err = p.boolean(k, v)
		case "share_threshold":
			r.shareThreshold, err = p.boolean(k, v)
		}
		if err != nil {
			return nil, err
		}
	}
	if r.key == "" {
		return nil, p.errf(n, "descriptor without key")
	}
	if strings.HasSuffix(r.value, "*") {
		r.wildcard, r.value = true, strings.TrimSuffix(r.value, "*")
	}
	if r.shareThreshold && !r.wildcard {
		return nil, p.errf(n, "share_threshold: only for a wildcard value (ending in *), key %q value %q", r.key, r.value)
	}
	r.statKey = r.key
	if r.value != "" || r.wildcard {
		r.statKey += "_" + r.value
		if r.wildcard {
			r.statKey += "*"
		}
	}
	if parent != "" {
		r.statKey = parent + "." + r.statKey
	}
	if rl != nil {
		if err := p.rateLimit(rl, r); err != nil {
			return nil, err
		}
	}
	if r.children, err = p.descriptors(kids, r.statKey); err != nil {
		return nil, err
	}
	return r, nil
}

// units are rate_limit.unit's values, any case; a month is 30 days and a
// year 365, as envoyproxy/ratelimit counts them.
var units = map[string]struct {
	d    time.Duration
	unit rlsv3.RateLimitResponse_RateLimit_Unit
}{
	"second": {time.Second, rlsv3.RateLimitResponse_RateLimit_SECOND},
	"minute": {time.Minute, rlsv3.RateLimitResponse_RateLimit_MINUTE},
	"hour":   {time.Hour, rlsv3.RateLimitResponse_RateLimit_HOUR},
	"day":    {24 * time.Hour, rlsv3.RateLimitResponse_RateLimit_DAY},
	"week":   {7 * 24 * time.Hour, rlsv3.RateLimitResponse_RateLimit_WEEK},
	"month":  {30 * 24 * time.Hour, rlsv3.RateLimitResponse_RateLimit_MONTH},
	"year":   {365 * 24 * time.Hour, rlsv3.RateLimitResponse_RateLimit_YEAR},
}

func (p *parser) rateLimit(n *yaml.Node, r *rule) error {
	if n.Kind != yaml.MappingNode {
		return p.errf(n, "rate_limit: want a mapping")
	}
	var (
		unitName          string
		per               time.Duration
		unitNode, perNode *yaml.Node
		rpu               uint32
		burst             uint32
		alg               = ratelimit.GCRA
		algSet            bool
		err               error
	)
	for i := 0; i < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch k.Value {
		case "unit":
			unitName, err = p.str(k, v)
			unitNode = v
		case "requests_per_unit":
			rpu, err = p.uint32(k, v)
		case "unlimited":
			r.unlimited, err = p.boolean(k, v)
		case "name":
			r.name, err = p.str(k, v)
		case "replaces":
			err = p.replaces(v, r)
		case "algorithm": // extension
			var s string
			if s, err = p.str(k, v); err == nil {
				if alg, err = ratelimit.ParseAlgorithm(strings.ReplaceAll(s, "_", "-")); err != nil {
					err = p.errf(v, "algorithm %q: want gcra, sliding_log or sliding_window", s)
				}
				algSet = true
			}
		case "per": // extension
			var s string
			if s, err = p.str(k, v); err == nil {
				if per, err = time.ParseDuration(s); err != nil || per <= 0 {
					err = p.errf(v, "per %q: want a positive duration such as 90s or 1h30m", s)
				}
			}
			perNode = v
		case "burst": // extension
			burst, err = p.uint32(k, v)
		}
		if err != nil {
			return err
		}
	}
	for _, name := range r.replaces {
		if name == r.name {
			return p.errf(n, "replaces: a limit cannot replace its own name %q", name)
		}
	}
	u, validUnit := units[strings.ToLower(unitName)]
	if r.unlimited {
		if validUnit {
			return p.errf(unitNode, "unit: an unlimited rate_limit takes no unit")
		}
		return nil
	}
	switch {
	case perNode != nil && unitNode != nil:
		return p.errf(perNode, "per: give unit or per, not both")
	case perNode != nil:
		u.d = per
	case unitNode == nil:
		return p.errf(n, "unit: missing; want second, minute, hour, day, week, month or year (or the extension per)")
	case !validUnit:
		return p.errf(unitNode, "unit %q: want second, minute, hour, day, week, month or year (or the extension per)", unitName)
	}
	r.limited, r.period = true, u.d
	r.pb = &rlsv3.RateLimitResponse_RateLimit{Name: r.name, RequestsPerUnit: rpu, Unit: u.unit}
	if perNode != nil {
		r.pb = currentLimit(r.name, rpu, per)
	}
	if rpu == 0 {
		// Nothing ever passes, as in envoyproxy/ratelimit; no store call.
		return nil
	}
	lim, err := compile(rpu, u.d, int(burst), alg, algSet)
	if err != nil {
		return p.errf(n, "rate_limit: %v", err)
	}
	r.setLimit(lim)
	return nil
}

// setLimit makes lim the rule's limit.
func (r *rule) setLimit(lim ratelimit.Limit) {
	r.limits = []ratelimit.Limit{lim}
	r.limit = &r.limits[0]
}

// compile makes the Limit of rpu events per period: GCRA unless another
// algorithm is asked for; when GCRA cannot hold the rate to within 1% (its
// interval is a whole microsecond: a million per second at most) and no
// algorithm was asked for, the sliding window, which has no such bound.
func compile(rpu uint32, period time.Duration, burst int, alg ratelimit.Algorithm, algSet bool) (ratelimit.Limit, error) {
	lim := ratelimit.Limit{Events: int(rpu), Per: period, Burst: burst, Algorithm: alg}
	if !algSet && burst == 0 && !gcraHolds(lim) {
		lim.Algorithm = ratelimit.SlidingWindow
	}
	return lim, lim.Validate()
}

// gcraHolds reports whether GCRA's whole-microsecond interval keeps lim's
// rate to within 1%.
func gcraHolds(lim ratelimit.Limit) bool {
	iv := lim.Interval()
	return iv > 0 && int64(iv)*int64(lim.Events) <= int64(lim.Per)+int64(lim.Per)/100
}

func (p *parser) replaces(n *yaml.Node, r *rule) error {
	if n.ShortTag() == "!!null" {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		return p.errf(n, "replaces: want a list of {name: …}")
	}
	for _, e := range n.Content {
		name := ""
		for i := 0; i < len(e.Content); i += 2 {
			if e.Content[i].Value == "name" {
				var err error
				if name, err = p.str(e.Content[i], e.Content[i+1]); err != nil {
					return err
				}
			}
		}
		if name == "" {
			return p.errf(e, "replaces: an entry without a name")
		}
		r.replaces = append(r.replaces, name)
	}
	return nil
}
