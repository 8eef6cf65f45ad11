package scheduler

// WithRedactor sets a function every run's error text and output pass
// through before they are recorded (run record, trace span, log): the
// program that embeds the scheduler gives it the secrets it must never
// store, such as its admin token or its store's password, to mask. A job
// may print them (a job that was given one in its environment, a server
// that echoes a header); Redis, and whoever reads the records, must not get
// them. Default: none.
func WithRedactor(redact func(string) string) Option {
	return func(c *config) { c.redact = redact }
}

// redacted is s through the redactor, if any.
func (c *config) redacted(s string) string {
	if c.redact == nil || s == "" {
		return s
	}
	return c.redact(s)
}
