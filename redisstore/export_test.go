package redisstore

// Library returns the functions library's name and source, and the name of
// the function of every operation, by file, for tests.
func Library() (name, source string, functions map[string]string) {
	assemble()
	functions = map[string]string{}
	for file, o := range ops {
		functions[file] = o.fn
	}
	return library.name, library.source, functions
}
