package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

// schemaSections pairs each section of schemaFields with the loader's list
// of its fields.
var schemaSections = []struct {
	name   string
	fields []string
}{
	{"top", topFields}, {"store", storeFields}, {"tls", tlsFields}, {"sentinel", sentinelFields},
	{"cluster", clusterFields}, {"redlock", redlockFields}, {"admin", adminFields}, {"admin_tls", adminTLSFields},
	{"job", jobFields}, {"http", httpFields}, {"notification", notificationFields}, {"blackout", blackoutFields},
}

// Every field the loader lists has a type and a description in the schema,
// and the schema describes no field the loader does not list. A new field
// fails here until schemaFields says what it is.
func TestSchemaDescribesEveryField(t *testing.T) {
	var names []string
	for _, s := range schemaSections {
		names = append(names, s.name)
		docs := schemaFields[s.name]
		for _, f := range s.fields {
			d, ok := docs[f]
			switch {
			case !ok:
				t.Errorf("%s field %q: the loader reads it, and schemaFields[%q] (config/schema.go) does not describe it", s.name, f, s.name)
			case strings.TrimSpace(d.desc) == "" || len(d.schema) == 0:
				t.Errorf("%s field %q: needs a description and a type in schemaFields", s.name, f)
			}
		}
		for f := range docs {
			if !slices.Contains(s.fields, f) {
				t.Errorf("%s field %q is in schemaFields but not in the loader's list", s.name, f)
			}
		}
	}
	for name := range schemaFields {
		if !slices.Contains(names, name) {
			t.Errorf("schemaFields[%q] is no section of the loader", name)
		}
	}

	// And in the generated document: every property has a description.
	var doc any
	if err := json.Unmarshal(JSONSchema(), &doc); err != nil {
		t.Fatal(err)
	}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			if props, ok := v["properties"].(map[string]any); ok {
				for name, p := range props {
					if d, _ := p.(map[string]any)["description"].(string); d == "" {
						t.Errorf("%s.properties.%s has no description", path, name)
					}
				}
			}
			for _, k := range slices.Sorted(maps.Keys(v)) {
				if k == "allOf" || k == "not" {
					continue // conditions name fields already described
				}
				walk(path+"."+k, v[k])
			}
		case []any:
			for i, e := range v {
				walk(fmt.Sprintf("%s[%d]", path, i), e)
			}
		}
	}
	walk("$", doc)
}

// probes place a field named NAME in each section of a table that is
// otherwise fine, and say where the loader reports on it.
var probes = []struct {
	section, def, path, yaml string
}{
	{"top", "", "NAME", "jobs: []\nNAME: null\n"},
	{"store", "store", "store.NAME", "store:\n  NAME: null\njobs: []\n"},
	{"tls", "tls", "store.tls.NAME", "store:\n  url: rediss://h:1\n  tls:\n    NAME: null\njobs: []\n"},
	{"sentinel", "sentinel", "store.sentinel.NAME", "store:\n  mode: sentinel\n  sentinel:\n    master: m\n    addrs: [\"h:1\"]\n    NAME: null\njobs: []\n"},
	{"cluster", "cluster", "store.cluster.NAME", "store:\n  mode: cluster\n  cluster:\n    addrs: [\"h:1\"]\n    NAME: null\njobs: []\n"},
	{"redlock", "redlock", "store.redlock.NAME", "store:\n  mode: redlock\n  redlock:\n    urls: [\"redis://a:1\", \"redis://b:1\", \"redis://c:1\"]\n    NAME: null\njobs: []\n"},
	{"admin", "admin", "admin.NAME", "admin:\n  NAME: null\njobs: []\n"},
	{"job", "job", "jobs[0].NAME", "jobs:\n  - name: a\n    schedule: \"@every 1s\"\n    command: [x]\n    NAME: null\n"},
	{"defaults", "defaults", "defaults.NAME", "defaults:\n  NAME: null\njobs: []\n"},
	{"http", "http", "jobs[0].http.NAME", "jobs:\n  - name: a\n    schedule: \"@every 1s\"\n    http:\n      url: http://h/\n      NAME: null\n"},
}

// The loader takes a field exactly where the schema has it. Every name any
// section knows is tried in every section, so a field read by the loader's
// code but missing from its list (or listed in the wrong section) shows.
func TestSchemaMatchesLoader(t *testing.T) {
	var doc struct {
		Properties        map[string]any `json:"properties"`
		PatternProperties map[string]any `json:"patternProperties"`
		Defs              map[string]struct {
			Properties map[string]any `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(JSONSchema(), &doc); err != nil {
		t.Fatal(err)
	}
	candidates := []string{"zz_unknown", "x-anchor", "args", "headers_", "Name"}
	for _, s := range schemaSections {
		candidates = append(candidates, s.fields...)
	}
	slices.Sort(candidates)
	candidates = slices.Compact(candidates)
	for _, p := range probes {
		props := doc.Properties
		if p.def != "" {
			props = doc.Defs[p.def].Properties
		}
		if len(props) == 0 {
			t.Fatalf("%s: the schema has no properties there", p.section)
		}
		for _, name := range candidates {
			data := strings.ReplaceAll(p.yaml, "NAME", name)
			_, err := Parse("probe.yaml", []byte(data), WithLookupEnv(func(string) (string, bool) { return "", false }))
			path := strings.ReplaceAll(p.path, "NAME", name)
			loader := true
			var es *Errors
			if errors.As(err, &es) {
				for _, e := range *es {
					if e.Path == path && (strings.HasPrefix(e.Err.Error(), "unknown field") || strings.HasPrefix(e.Err.Error(), "cannot have a default")) {
						loader = false
					}
				}
			}
			_, schema := props[name]
			if p.section == "top" && strings.HasPrefix(name, "x-") {
				_, schema = doc.PatternProperties["^x-"]
			}
			if loader != schema {
				t.Errorf("%s field %q: the loader takes it: %v, the schema has it: %v (%v)", p.section, name, loader, schema, err)
			}
		}
	}
}
