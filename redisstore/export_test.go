package redisstore

// ScriptSources returns the source of every script, by name, for tests.
func ScriptSources() map[string]string {
	return sources
}
