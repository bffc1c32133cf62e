package beanstalk

import "sync"

// In beanstalkd a tube lives while a job or a connection refers to it, and
// "default" lives for ever. The store knows every live tube: connections
// hold the tubes they use and watch there (conn.hold), so that every server
// on the store sees them. The registry counts what this server's
// connections use, watch and wait on (the current-* fields of stats-tube),
// and keeps the order in which list-tubes shows the tubes.

// refs counts this server's connections that use, watch or wait on a tube.
type refs struct {
	using, watching, waiting int64
}

func (r refs) zero() bool { return r.using == 0 && r.watching == 0 && r.waiting == 0 }

// registry holds the tubes this server's connections refer to, and the
// order of every tube the server has listed.
type registry struct {
	mu   sync.Mutex
	refs map[string]*refs
	// order is beanstalkd's list of tubes: creation order, except that a
	// tube that goes away is replaced by the last one (as beanstalkd's
	// ms_delete does). "default" is always first.
	order []string
	pos   map[string]int // index in order
}

func (g *registry) init() {
	g.refs = map[string]*refs{}
	g.order = []string{defaultTube}
	g.pos = map[string]int{defaultTube: 0}
}

// addLocked appends tube to the order if it is not in it.
func (g *registry) addLocked(tube string) {
	if _, ok := g.pos[tube]; !ok {
		g.pos[tube] = len(g.order)
		g.order = append(g.order, tube)
	}
}

// adjust changes the counts of tube by f.
func (g *registry) adjust(tube string, f func(*refs)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	r := g.refs[tube]
	if r == nil {
		r = &refs{}
		g.refs[tube] = r
		g.addLocked(tube)
	}
	f(r)
	if r.zero() {
		delete(g.refs, tube)
	}
}

func (g *registry) use(tube string, delta int64) {
	g.adjust(tube, func(r *refs) { r.using += delta })
}

func (g *registry) watch(tube string, delta int64) {
	g.adjust(tube, func(r *refs) { r.watching += delta })
}

func (g *registry) wait(tubes []string, delta int64) {
	for _, t := range tubes {
		g.adjust(t, func(r *refs) { r.waiting += delta })
	}
}

// counts returns the connection counts of tube, and whether the tube lives
// without any job (a connection refers to it, or it is "default").
func (g *registry) counts(tube string) (refs, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	r, ok := g.refs[tube]
	if !ok {
		return refs{}, tube == defaultTube
	}
	return *r, true
}

// list returns the live tubes, given those the store knows, in the order
// list-tubes shows them. Tubes that went away since the last call leave the
// order; store tubes the server has not seen join it at the end.
func (g *registry) list(store []string) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	inStore := make(map[string]bool, len(store))
	for _, t := range store {
		inStore[t] = true
	}
	for i := 0; i < len(g.order); {
		t := g.order[i]
		if t == defaultTube || inStore[t] || g.refs[t] != nil {
			i++
			continue
		}
		last := len(g.order) - 1
		g.order[i] = g.order[last]
		g.pos[g.order[i]] = i
		g.order = g.order[:last]
		delete(g.pos, t)
	}
	for _, t := range store {
		g.addLocked(t)
	}
	return append([]string(nil), g.order...)
}
