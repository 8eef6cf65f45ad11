package config_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/solocron/solocron/config"
)

// Aliases are followed, but a document cannot make the walk do much more work
// than its own size: a "billion laughs" table is refused, quickly.
func TestAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("x-job: &j\n  name: a\n  schedule: \"@hourly\"\n  command: [x]\n  env:\n")
	for i := range 20000 {
		fmt.Fprintf(&b, "    K%d: v\n", i)
	}
	b.WriteString("jobs: [")
	for range 20000 {
		b.WriteString("*j, ")
	}
	b.WriteString("]\n")
	done := make(chan error, 1)
	go func() {
		_, err := config.Parse("t.yaml", []byte(b.String()), config.WithLookupEnv(lookup))
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(20 * time.Second):
		// The goroutine is left behind; the test binary exits soon after.
		t.Fatal("Parse still running after 20s: aliases are expanded without bound")
	}
	if err == nil || !strings.Contains(err.Error(), "yaml: aliases expand the document too far") {
		t.Errorf("err = %.300v, want the alias limit", err)
	}
}

func TestClassicBillionLaughs(t *testing.T) {
	text := `x-a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
x-b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
x-c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
x-d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
x-e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
x-f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
x-g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
x-h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
x-i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
jobs:
  - {name: a, schedule: "@hourly", command: *i, env: {<<: [*i, *h]}}
  - *i
`
	_, err := parse(t, text)
	if err == nil {
		t.Fatal("no error")
	}
}

func TestSelfReferences(t *testing.T) {
	for _, text := range []string{
		"jobs: &a [*a]\n",
		"jobs:\n  - &a {name: a, schedule: \"@hourly\", command: [x], <<: *a}\n",
		"jobs:\n  - &a {name: a, schedule: \"@hourly\", command: [x], env: *a}\n",
		"jobs:\n  - &a {name: a, schedule: \"@hourly\", http: *a}\n",
		"x: &a {<<: *a}\njobs: [*a]\n",
	} {
		if _, err := parse(t, text); err == nil {
			t.Errorf("Parse(%q): no error", text)
		}
	}
}

func TestDeepNesting(t *testing.T) {
	for _, text := range []string{
		strings.Repeat("[", 100000),
		"jobs: " + strings.Repeat("[", 9000) + strings.Repeat("]", 9000) + "\n",
		"jobs:\n  - name: a\n    env: " + strings.Repeat("{a: ", 5000) + "b" + strings.Repeat("}", 5000) + "\n",
	} {
		if _, err := parse(t, text); err == nil {
			t.Errorf("Parse(%.40q...): no error", text)
		}
	}
}

func TestGarbage(t *testing.T) {
	for _, data := range [][]byte{
		{0x00, 0x01, 0xff, 0xfe},
		{0xfe, 0xff, 0x00, 'j', 0x00, 'o'}, // UTF-16 BOM
		[]byte("\xef\xbb\xbfjobs: []\n"),   // UTF-8 BOM: fine
		[]byte("jobs: [\"\\xZZ\"]"),
		[]byte("? [a]\n: b\njobs: []\n"),
		[]byte("jobs: []\n!!binary aGVsbG8=: x\n"),
		[]byte("%YAML 1.1\n---\njobs: []\n"),
		[]byte("jobs: !!str []\n"),
		[]byte("jobs: [{name: !!int x}]\n"),
	} {
		f, err := parse(t, string(data))
		if (f == nil) == (err == nil) {
			t.Errorf("Parse(%q) = %v, %v", data, f, err)
		}
	}
}

func TestTooLarge(t *testing.T) {
	data := "jobs: []\n" + strings.Repeat("#", 16<<20)
	_, err := parse(t, data)
	wantErrors(t, err, "1:1: yaml: the file is larger than 16 MiB")
}
