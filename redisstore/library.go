package redisstore

import (
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
)

//go:embed scripts/*.lua
var scriptFS embed.FS

// The server-side code is one Redis Functions library, assembled at start
// from scripts/*.lua and loaded once on every master (FUNCTION LOAD); each
// operation is called with FCALL. Each operation is one file, headed by
// its KEYS/ARGV/returns contract; each family of operations (families.go,
// the one registry: queue, counters_, sc_, hx_, lk_, rl_) runs with one
// helper file, whose functions are defined once, when the library loads,
// not on every call: a call runs only its operation. An operation file's
// body becomes the body of a Lua function; KEYS and ARGV, globals in a
// script, are the library's two upvalues, set on entry to each call (Redis
// runs one call at a time), and the entry calls the helper file's enter
// function first, if it has one. A file's first line, "#!lua" with an
// optional "flags=a,b", gives the function's flags.
//
// The library's name and every function's name carry a digest of the
// whole source, so that processes of different versions sharing one Redis
// each call their own code.

// op is one server-side operation: a function of the library.
type op struct {
	file   string // scripts/<file>.lua
	fn     string // the function's name in Redis, set by assemble
	flags  []string
	family *family
	merge  merger // how concurrent calls merge into one, or nil
	waits  bool   // a change of the queue: waits for Options.Replicas
}

// Name is the operation's file name, for errors and tests.
func (o *op) Name() string { return o.file }

// ops holds every operation by file name.
var ops = map[string]*op{}

// library is the assembled source and its name.
var library struct {
	name, source string
	digest       string
}

// operation registers scripts/<file>.lua as an operation of the library.
func operation(file string) *op {
	if _, dup := ops[file]; dup {
		panic("redisstore: operation " + file + " registered twice")
	}
	o := &op{file: file, family: familyOf(file)}
	ops[file] = o
	return o
}

// assembled makes the library once, on first use: every operation is
// registered by then (operations are package-level variables), and stores
// opened at once in several goroutines must not build it twice.
var assembled sync.Once

// assemble builds the library from every registered operation and names
// each function, once.
func assemble() { assembled.Do(build) }

func build() {
	// The operations by helper file, the files in the order the families
	// first name them.
	byHelpers := map[string][]*op{}
	for _, o := range ops {
		byHelpers[o.family.helpers.file] = append(byHelpers[o.family.helpers.file], o)
	}
	var order []helpers
	for _, f := range families {
		if !slices.Contains(order, f.helpers) && len(byHelpers[f.helpers.file]) > 0 {
			order = append(order, f.helpers)
		}
	}

	// The body, with placeholder function names; the digest of the body
	// then names the library and the functions.
	var b strings.Builder
	b.WriteString("local KEYS, ARGV\n")
	b.Write(read(sharedHelpers))
	b.WriteString("\n")
	for _, h := range order {
		list := byHelpers[h.file]
		sort.Slice(list, func(i, j int) bool { return list[i].file < list[j].file })
		b.WriteString("do\n")
		b.Write(read(h.file))
		b.WriteString("\n")
		for _, o := range list {
			src := string(read(o.file))
			nl := strings.IndexByte(src, '\n')
			shebang := src[:nl]
			if !strings.HasPrefix(shebang, "#!lua") {
				panic("redisstore: scripts/" + o.file + ".lua does not start with #!lua")
			}
			if f, ok := strings.CutPrefix(shebang, "#!lua flags="); ok {
				o.flags = strings.Split(f, ",")
			}
			fmt.Fprintf(&b, "local function op_%s()\n%s\nend\n", o.file, src[nl+1:])
		}
		for _, o := range list {
			enter := ""
			if h.enter != "" {
				enter = h.enter + "(); "
			}
			flags := ""
			for i, f := range o.flags {
				if i > 0 {
					flags += ", "
				}
				flags += "'" + f + "'"
			}
			fmt.Fprintf(&b, "redis.register_function{function_name = '@%s', flags = {%s}, callback = function(k, a) KEYS, ARGV = k, a; %sreturn op_%s() end}\n",
				o.file, flags, enter, o.file)
		}
		b.WriteString("end\n")
	}
	body := b.String()
	sum := sha1.Sum([]byte(body))
	digest := hex.EncodeToString(sum[:])[:12]
	for _, o := range ops {
		o.fn = "hg_" + o.file + "_" + digest
		body = strings.Replace(body, "'@"+o.file+"'", "'"+o.fn+"'", 1)
	}
	library.digest = digest
	library.name = "hourglass_" + digest
	library.source = "#!lua name=" + library.name + "\n" + body
}

// sharedHelpers is the helper file that every family's code runs with
// (the one GCRA, of tube rates and rate limits alike): its functions come
// first in the library, outside every family's block.
const sharedHelpers = "gcra_lib"

func read(file string) []byte {
	src, err := scriptFS.ReadFile("scripts/" + file + ".lua")
	if err != nil {
		panic(err)
	}
	return src
}
