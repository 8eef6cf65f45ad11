package config_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"

	"github.com/solocron/solocron/config"
)

// compileSchema compiles config.JSONSchema() with a real JSON Schema
// validator, which also checks it against the 2020-12 meta-schema.
func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(config.JSONSchema()))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(config.SchemaID, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(config.SchemaID)
	if err != nil {
		t.Fatalf("the schema does not compile: %v", err)
	}
	return s
}

// instance reads a YAML table as the JSON value an editor's YAML language
// server checks: aliases and << merges resolved.
func instance(t *testing.T, name string, data []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	j, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("%s as JSON: %v", name, err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

// Every table the loader takes in the repository validates against the
// schema, and so do the spellings the loader allows (variables in typed
// fields, a bare 0 duration, numbers as strings, x- anchors, null sections).
func TestSchemaAcceptsGoodTables(t *testing.T) {
	s := compileSchema(t)
	files, _ := filepath.Glob("testdata/good-*.yaml")
	examples, _ := filepath.Glob("../examples/*/solocron.yaml")
	files = append(append(files, examples...), "../config.example.yaml")
	if len(files) < 5 {
		t.Fatalf("found only %v", files)
	}
	tables := map[string]string{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		tables[f] = string(data)
	}
	tables["spellings"] = `
x-base: &base {timeout: 0, retries: "${RETRIES}", paused: "${PAUSED}"}
replica_id: 7
admin:
defaults:
  <<: *base
  env: {PORT: 8080, DEBUG: true}
store:
  url: "${REDIS_URL}"
  max_clock_skew: 1.5s
  min_replicas_ack: 1
jobs:
  - name: a.b-c_1
    schedule: "@every 1s"
    command: [sleep, 1]
    lease: 1m30s
    overlap: "${OVERLAP}"
  - name: hook
    schedule: "0 * * * *"
    http: {url: "https://h.example/x", method: PATCH, headers: {X-N: 1}, expect_status: [200, "${CODE}"]}
`
	tables["empty jobs"] = "jobs:\n"
	for name, text := range tables {
		if err := s.Validate(instance(t, name, []byte(text))); err != nil {
			t.Errorf("%s does not validate against the schema:\n%v", name, err)
		}
	}
	// The spellings are the loader's, not only the schema's.
	env := func(k string) (string, bool) {
		v := map[string]string{"RETRIES": "2", "PAUSED": "false", "OVERLAP": "wait", "CODE": "204", "REDIS_URL": "redis://h:1"}[k]
		return v, v != ""
	}
	if _, err := config.Parse("spellings.yaml", []byte(tables["spellings"]), config.WithLookupEnv(env)); err != nil {
		t.Errorf("the loader refuses the spellings: %v", err)
	}
}

// Typical mistakes fail the schema, as they fail the loader.
func TestSchemaRejectsMistakes(t *testing.T) {
	s := compileSchema(t)
	const job = "  - name: a\n    schedule: \"@every 1s\"\n"
	for _, tc := range []struct{ what, yaml string }{
		{"no jobs", "store: {}\n"},
		{"a misspelt top-level field", "job: []\njobs: []\n"},
		{"a job field at the top", "timeout: 1s\njobs: []\n"},
		{"a misspelt job field", "jobs:\n" + job + "    comand: [x]\n"},
		{"a job without a schedule", "jobs:\n  - {name: a, command: [x]}\n"},
		{"a job without a name", "jobs:\n  - {schedule: \"@hourly\", command: [x]}\n"},
		{"a name with a space", "jobs:\n  - {name: a b, schedule: \"@hourly\", command: [x]}\n"},
		{"command and http", "jobs:\n" + job + "    command: [x]\n    http: {url: \"http://h/\"}\n"},
		{"command as one string", "jobs:\n" + job + "    command: ./draw --winners 10\n"},
		{"an empty command", "jobs:\n" + job + "    command: []\n"},
		{"a duration without a unit", "jobs:\n" + job + "    command: [x]\n    timeout: 30\n"},
		{"a negative duration", "jobs:\n" + job + "    command: [x]\n    lease: -5s\n"},
		{"a duration in words", "jobs:\n" + job + "    command: [x]\n    lease: thirty seconds\n"},
		{"concurrency in words", "jobs:\n" + job + "    command: [x]\n    concurrency: two\n"},
		{"a negative concurrency", "jobs:\n" + job + "    command: [x]\n    concurrency: -1\n"},
		{"an unknown overlap", "jobs:\n" + job + "    command: [x]\n    overlap: queue\n"},
		{"an unknown catchup", "jobs:\n" + job + "    command: [x]\n    catchup: first\n"},
		{"paused: yes", "jobs:\n" + job + "    command: [x]\n    paused: yes\n"},
		{"a status code out of range", "jobs:\n" + job + "    http: {url: \"http://h/\", expect_status: [999]}\n"},
		{"an http url without scheme", "jobs:\n" + job + "    http: {url: \"h.example/x\"}\n"},
		{"a misspelt http field", "jobs:\n" + job + "    http: {url: \"http://h/\", header: {A: b}}\n"},
		{"env as a list", "jobs:\n" + job + "    command: [x]\n    env: [A=b]\n"},
		{"a name in defaults", "defaults: {name: x}\njobs: []\n"},
		{"an unknown store mode", "store: {mode: master}\njobs: []\n"},
		{"sentinel mode without sentinel", "store: {mode: sentinel}\njobs: []\n"},
		{"redlock with two servers", "store: {mode: redlock, redlock: {urls: [\"redis://a:1\", \"redis://b:1\"]}}\njobs: []\n"},
		{"a store url of another scheme", "store: {url: \"http://h:1\"}\njobs: []\n"},
		{"a key prefix with a brace", "store: {key_prefix: \"a{b\"}\njobs: []\n"},
		{"a misspelt admin field", "admin: {listn: \":9090\"}\njobs: []\n"},
		{"an unknown notification event", "notifications: [{name: ops, url: \"https://h/\", on: [failure]}]\njobs: []\n"},
		{"a notification without url", "notifications: [{name: ops, on: [failed]}]\njobs: []\n"},
		{"a notification url of another scheme", "notifications: [{name: ops, url: \"ftp://h/\", on: [failed]}]\njobs: []\n"},
		{"notify as one string", "notifications: [{name: ops, url: \"https://h/\", on: [failed]}]\njobs:\n" + job + "    command: [x]\n    notify: ops\n"},
	} {
		if err := s.Validate(instance(t, tc.what, []byte(tc.yaml))); err == nil {
			t.Errorf("%s: the schema accepts\n%s", tc.what, tc.yaml)
		}
		if _, err := config.Parse("mistake.yaml", []byte(tc.yaml)); err == nil {
			t.Errorf("%s: the loader accepts\n%s", tc.what, tc.yaml)
		}
	}
}

// docs/solocron.schema.json is what the code generates, and the example
// table points editors at it.
func TestSchemaFileUpToDate(t *testing.T) {
	got, err := os.ReadFile("../docs/solocron.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, config.JSONSchema()) {
		t.Errorf("docs/solocron.schema.json is stale: run go run ./cmd/scheduler schema > docs/solocron.schema.json")
	}
	example, err := os.ReadFile("../config.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const first = "# yaml-language-server: $schema=./docs/solocron.schema.json\n"
	if !bytes.HasPrefix(example, []byte(first)) {
		t.Errorf("config.example.yaml must start with %q", first)
	}
}
