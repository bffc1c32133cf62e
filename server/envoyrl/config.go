package envoyrl

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hourglass-io/hourglass/ratelimit"
	"gopkg.in/yaml.v3"
)

// ErrConfig is wrapped by every error about a configuration file. The
// error's text names the file and the line.
var ErrConfig = errors.New("envoyrl: bad configuration")

// rule is one compiled descriptor node of a domain's tree.
type rule struct {
	key, value string // value "" matches any value; a trailing * matches a prefix
	wildcard   bool   // value ends in *: value holds the prefix
	limit      *ratelimit.Limit
	unlimited  bool
	shadow     bool
	detailed   bool
	name       string   // rate_limit.name, for replaces
	replaces   []string // names this limit replaces
	statKey    string   // key or key_value, as the metrics name it
	children   []*rule
	file       string
	line       int
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
	out := make([]string, 0, len(r.domains))
	for d := range r.domains {
		out = append(out, d)
	}
	slices.Sort(out)
	return out
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
// file and the line.
type parser struct {
	file  string
	names map[string]int // rate_limit names, to line
}

func (p *parser) errf(n *yaml.Node, format string, args ...any) error {
	return fmt.Errorf("%w: %s:%d: %s", ErrConfig, p.file, n.Line, fmt.Sprintf(format, args...))
}

func parseFile(file string, b []byte) (domain string, line int, top []*rule, err error) {
	p := &parser{file: file, names: map[string]int{}}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return "", 0, nil, fmt.Errorf("%w: %s: %w", ErrConfig, file, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return "", 1, nil, fmt.Errorf("%w: %s:1: want a mapping with domain and descriptors", ErrConfig, file)
	}
	root := doc.Content[0]
	var descs *yaml.Node
	for i := 0; i < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch k.Value {
		case "domain":
			if domain, err = p.str(v); err != nil {
				return "", 0, nil, err
			}
			line = k.Line
		case "descriptors":
			descs = v
		default:
			return "", 0, nil, p.errf(k, "unknown field %q (want domain or descriptors)", k.Value)
		}
	}
	if domain == "" {
		return "", 0, nil, p.errf(root, "domain is missing or empty")
	}
	if descs != nil {
		if top, err = p.descriptors(descs, ""); err != nil {
			return "", 0, nil, err
		}
	}
	return domain, line, top, nil
}

func (p *parser) str(n *yaml.Node) (string, error) {
	if n.Kind != yaml.ScalarNode {
		return "", p.errf(n, "want a string")
	}
	return n.Value, nil
}

func (p *parser) boolean(n *yaml.Node) (bool, error) {
	var b bool
	if n.Kind != yaml.ScalarNode || n.Decode(&b) != nil {
		return false, p.errf(n, "want true or false, got %q", n.Value)
	}
	return b, nil
}

func (p *parser) integer(n *yaml.Node) (int, error) {
	if n.Kind != yaml.ScalarNode {
		return 0, p.errf(n, "want a whole number")
	}
	v, err := strconv.Atoi(n.Value)
	if err != nil || v < 0 || v > 1<<31-1 {
		return 0, p.errf(n, "want a whole number from 0 to %d, got %q", 1<<31-1, n.Value)
	}
	return v, nil
}

func (p *parser) descriptors(n *yaml.Node, parent string) ([]*rule, error) {
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
		id := r.key + "\x00" + r.value
		if r.wildcard {
			id += "*"
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
	if n.Kind != yaml.MappingNode {
		return nil, p.errf(n, "a descriptor: want a mapping with key")
	}
	r := &rule{file: p.file, line: n.Line}
	var rl, rlKey, kids *yaml.Node
	var err error
	for i := 0; i < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch k.Value {
		case "key":
			r.key, err = p.str(v)
		case "value":
			r.value, err = p.str(v)
		case "rate_limit":
			rl, rlKey = v, k
		case "descriptors":
			kids = v
		case "shadow_mode":
			r.shadow, err = p.boolean(v)
		case "detailed_metric":
			r.detailed, err = p.boolean(v)
		default:
			err = p.errf(k, "unknown descriptor field %q", k.Value)
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
		if err := p.rateLimit(rl, rlKey, r); err != nil {
			return nil, err
		}
	}
	if kids != nil {
		if r.children, err = p.descriptors(kids, r.statKey); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// units are rate_limit.unit's values; a month is 30 days and a year 365,
// as envoyproxy/ratelimit counts them.
var units = map[string]time.Duration{
	"second": time.Second, "minute": time.Minute, "hour": time.Hour, "day": 24 * time.Hour,
	"week": 7 * 24 * time.Hour, "month": 30 * 24 * time.Hour, "year": 365 * 24 * time.Hour,
}

func (p *parser) rateLimit(n, at *yaml.Node, r *rule) error {
	if n.Kind != yaml.MappingNode {
		return p.errf(n, "rate_limit: want a mapping")
	}
	var (
		unit, per         time.Duration
		unitNode, perNode *yaml.Node
		rpu, burst        int
		rpuSet            bool
		alg               = ratelimit.GCRA
		err               error
	)
	for i := 0; i < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch k.Value {
		case "unit":
			var s string
			if s, err = p.str(v); err == nil {
				var ok bool
				if unit, ok = units[strings.ToLower(s)]; !ok {
					err = p.errf(v, "unit %q: want second, minute, hour, day, week, month or year (or the extension per)", s)
				}
			}
			unitNode = v
		case "requests_per_unit":
			rpu, err = p.integer(v)
			rpuSet = true
		case "unlimited":
			r.unlimited, err = p.boolean(v)
		case "name":
			if r.name, err = p.str(v); err == nil {
				if prev, ok := p.names[r.name]; ok {
					err = p.errf(v, "rate_limit name %q is also given at line %d", r.name, prev)
				}
				p.names[r.name] = v.Line
			}
		case "replaces":
			err = p.replaces(v, r)
		case "algorithm": // extension
			var s string
			if s, err = p.str(v); err == nil {
				if alg, err = ratelimit.ParseAlgorithm(strings.ReplaceAll(s, "_", "-")); err != nil {
					err = p.errf(v, "algorithm %q: want gcra, sliding_log or sliding_window", s)
				}
			}
		case "per": // extension
			var s string
			if s, err = p.str(v); err == nil {
				if per, err = time.ParseDuration(s); err != nil || per <= 0 {
					err = p.errf(v, "per %q: want a positive duration such as 90s or 1h30m", s)
				}
			}
			perNode = v
		case "burst": // extension
			burst, err = p.integer(v)
		default:
			err = p.errf(k, "unknown rate_limit field %q", k.Value)
		}
		if err != nil {
			return err
		}
	}
	if r.unlimited {
		if rpuSet || unitNode != nil || perNode != nil {
			return p.errf(at, "an unlimited rate_limit takes no unit, per or requests_per_unit")
		}
		return nil
	}
	switch {
	case unitNode != nil && perNode != nil:
		return p.errf(perNode, "give unit or per, not both")
	case unitNode == nil && perNode == nil:
		return p.errf(at, "rate_limit needs a unit (or the extension per)")
	case !rpuSet || rpu < 1:
		return p.errf(at, "rate_limit needs requests_per_unit of at least 1")
	}
	if perNode == nil {
		per = unit
	}
	lim := ratelimit.Limit{Events: rpu, Per: per, Burst: burst, Algorithm: alg}
	if err := lim.Validate(); err != nil {
		return p.errf(at, "%v", err)
	}
	r.limit = &lim
	return nil
}

func (p *parser) replaces(n *yaml.Node, r *rule) error {
	if n.Kind != yaml.SequenceNode {
		return p.errf(n, "replaces: want a list of {name: …}")
	}
	for _, e := range n.Content {
		if e.Kind != yaml.MappingNode || len(e.Content) != 2 || e.Content[0].Value != "name" || e.Content[1].Value == "" {
			return p.errf(e, "replaces: want {name: NAME}")
		}
		r.replaces = append(r.replaces, e.Content[1].Value)
	}
	return nil
}
