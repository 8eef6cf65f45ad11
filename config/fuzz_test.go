package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/solocron/solocron/config"
	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler"
)

// FuzzParse checks that Parse never panics and that what it returns keeps
// its promises: either a File whose jobs the scheduler accepts, or a list of
// positioned problems. The seed corpus (testdata/fuzz/FuzzParse) holds real
// looking tables; the tables in the other tests are added here too.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{goodFile, "jobs: []\n", "", "a: &a [*a]\n",
		"jobs:\n  - &j {name: a, schedule: \"@hourly\", command: [x]}\n  - *j\n  - <<: *j\n    name: b\n"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := config.Parse("fuzz.yaml", data,
			config.WithLookupEnv(lookup), config.WithFuncs(map[string]jobs.Job{"reindex": reindex}))
		if err == nil {
			if file == nil {
				t.Fatal("nil File and nil error")
			}
			for i, j := range file.Jobs {
				if j.Handler == nil {
					t.Errorf("jobs[%d] has no Handler", i)
				}
			}
			if err := scheduler.ValidateTable(file.Jobs); err != nil {
				t.Errorf("a loaded table fails ValidateTable: %v", err)
			}
			return
		}
		if file != nil {
			t.Error("a File along with errors")
		}
		var es *config.Errors
		if !errors.As(err, &es) || len(*es) == 0 {
			t.Fatalf("error %v (%T) is not a non-empty *config.Errors", err, err)
		}
		prev := (*es)[0]
		for _, e := range *es {
			if e.File != "fuzz.yaml" || e.Line < 1 || e.Column < 1 || e.Path == "" || e.Err == nil {
				t.Errorf("badly formed entry %+v", e)
			}
			if e.Line < prev.Line || e.Line == prev.Line && e.Column < prev.Column {
				t.Errorf("entries out of order: %v before %v", prev, e)
			}
			prev = e
		}
		if !strings.HasPrefix(err.Error(), "fuzz.yaml:") {
			t.Errorf("Error() = %q", err)
		}
	})
}

// TestSeedCorpusParses keeps the real-looking seed files honest: the ones
// named good-* load, the others report problems.
func TestSeedCorpusParses(t *testing.T) {
	names, err := filepath.Glob("testdata/*.yaml")
	if err != nil || len(names) == 0 {
		t.Fatalf("no testdata/*.yaml: %v", err)
	}
	for _, name := range names {
		t.Run(filepath.Base(name), func(t *testing.T) {
			data, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			_, err = config.Parse(name, data, config.WithLookupEnv(lookup),
				config.WithFuncs(map[string]jobs.Job{"reindex": reindex}))
			if good := strings.HasPrefix(filepath.Base(name), "good-"); good != (err == nil) {
				t.Errorf("Parse(%s) = %v", name, err)
			}
		})
	}
}
