package main

import (
	"flag"

	"github.com/solocron/solocron/config"
)

// schemaFlags: `scheduler schema` prints the JSON Schema of the job table,
// for editors (config.example.yaml's first line points the YAML language
// server at the copy in docs/solocron.schema.json).
func schemaFlags(fs *flag.FlagSet, c *cli) func([]string) int {
	return func(pos []string) int {
		if len(pos) > 0 {
			return c.usageError("schema", "unexpected arguments %q", pos)
		}
		if _, err := c.stdout.Write(config.JSONSchema()); err != nil {
			return exitFailure
		}
		return exitOK
	}
}
