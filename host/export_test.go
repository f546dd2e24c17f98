package host

// WithoutFileEvents returns c with a watcher that adds no file watches, as
// on a folder whose filesystem sends no events: only polling sees edits.
func WithoutFileEvents(c Config) Config {
	c.noEvents = true
	return c
}
