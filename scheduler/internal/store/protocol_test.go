package store

import (
	"encoding/json"
	"io/fs"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// header returns a script's leading comment block.
func header(t *testing.T, name string) string {
	t.Helper()
	src, err := LuaFiles.ReadFile("lua/" + name + ".lua")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, line := range strings.Split(string(src), "\n") {
		if !strings.HasPrefix(line, "--") {
			break
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

var protocolLine = regexp.MustCompile(`(?m)^-- protocol: head=(\d+) per_run=(\d+) answers=(\S*)`)

// Every script's header states, in its "protocol:" line, the arguments the
// Go side sends it and the answers the Go side reads; this is that Go side.
func TestProtocolHeaders(t *testing.T) {
	files, err := fs.Glob(LuaFiles, "lua/*.lua")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range files {
		name := strings.TrimSuffix(strings.TrimPrefix(f, "lua/"), ".lua")
		seen[name] = true
		spec, ok := ScriptSpecs[name]
		if !ok {
			t.Errorf("%s: no scriptSpecs entry in protocol.go", f)
			continue
		}
		h := header(t, name)
		m := protocolLine.FindStringSubmatch(h)
		if m == nil {
			t.Errorf("%s: header has no protocol line", f)
			continue
		}
		head, _ := strconv.Atoi(m[1])
		perRun, _ := strconv.Atoi(m[2])
		if head != spec.Head || perRun != spec.PerRun {
			t.Errorf("%s: header says head=%d per_run=%d, protocol.go sends %d and %d", f, head, perRun, spec.Head, spec.PerRun)
		}
		var answers []string
		if m[3] != "" {
			answers = strings.Split(m[3], ",")
		}
		if !sameSet(answers, spec.Answers) {
			t.Errorf("%s: header answers %v, protocol.go reads %v", f, answers, spec.Answers)
		}
		// The prose agrees with the protocol line...
		if perRun > 0 && !regexp.MustCompile(`\b`+m[2]+` fields per (run|job)`).MatchString(h) {
			t.Errorf("%s: header prose does not say %d fields per run", f, perRun)
		}
		// ...and the script (with its parts) says every answer it is said to.
		src := luaParts.Script(LuaFiles, "lua", name)
		for _, a := range answers {
			if !strings.Contains(src, "'"+a+"'") {
				t.Errorf("%s: answer %q never appears in the script", f, a)
			}
		}
	}
	for name := range ScriptSpecs {
		if !seen[name] {
			t.Errorf("protocol.go specifies %q, which has no script", name)
		}
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	sort.Strings(a)
	sort.Strings(b)
	return slices.Equal(a, b)
}

// The encoders send the numbers of arguments ScriptSpecs states.
func TestProtocolEncoders(t *testing.T) {
	j := testSpec()
	r := StoreClaim{Job: j, ID: "j@x", Suffix: "x", Kind: RunScheduled, Owner: "o", Sched: time.Now(), Fire: time.Now()}
	check := func(name string, head, perRun []any) {
		t.Helper()
		spec := ScriptSpecs[name]
		if len(head) != spec.Head || (perRun != nil && len(perRun) != spec.PerRun) {
			t.Errorf("%s: encoders send %d head and %d per-run arguments, spec says %d and %d", name, len(head), len(perRun), spec.Head, spec.PerRun)
		}
	}
	check("claim", ClaimHeadArgs("r", time.Second, time.Second, 0, true, false), AppendClaim(nil, &r, NewArgBuf(0, 0)))
	check("admit", AdmitCall([]*StoreClaim{&r}, time.Second, 0).Args[:AdmitHead], AdmitCall([]*StoreClaim{&r}, time.Second, 0).Args[AdmitHead:])
	check("renew", nil, AppendRenew(nil, &RenewReq{Job: j, ID: r.ID, Owner: r.Owner}))
	check("complete", nil, AppendComplete(nil, &CompleteReq{R: &r}))
	check("undo", nil, AppendUndo(nil, &UndoReq{Job: j, ID: r.ID, Owner: r.Owner, Mode: UndoDrop}, time.Second))
	check("sync", SyncHeadArgs(time.Second, time.Second, 0, false), AppendSync(nil, &SyncReq{Job: j}, "r", true))
	check("attempt", AttemptCall(j, r.ID, r.Owner, 2, 0).Args, nil)
	check("trigger", TriggerCall(j.MetaKey, "j@manual-1", time.Second, false).Args, nil)
	check("pause", PauseArgs(true, "why"), nil)
	check("cancel", CancelCall(j.MetaKey, r.ID, "who").Args, nil)
	check("retry", RetryCall(j.MetaKey, r.ID, "j@manual-1", "who", false).Args, nil)
	// claim.lua reads the terms as '|'-separated fields: 22 of them.
	for _, grant := range []byte{0, '0', '1'} {
		r.Pgrant = grant
		if n := len(strings.Split(string(r.AppendTerms(nil)), "|")); n != 22 {
			t.Errorf("claim terms: %d fields, claim.lua reads 22", n)
		}
	}
}

// The run record has one schema, WireRun: the fields the parts copy from
// a record's hash (RECORD), plus those only the holder knows (trace), make
// it whole; so do the holder's history entry and what complete.lua adds.
func TestProtocolRecord(t *testing.T) {
	var schema []string
	rt := reflect.TypeOf(WireRun{})
	for i := range rt.NumField() {
		schema = append(schema, strings.Split(rt.Field(i).Tag.Get("json"), ",")[0])
	}
	var parts []byte
	files, _ := fs.Glob(LuaFiles, "lua/parts/*.lua")
	for _, f := range files {
		src, _ := LuaFiles.ReadFile(f)
		parts = append(parts, src...)
	}
	m := regexp.MustCompile(`(?s)local RECORD = \{(.*?)\}`).FindSubmatch(parts)
	if m == nil {
		t.Fatal("no part of lua/parts has the RECORD list")
	}
	var record []string
	for _, q := range regexp.MustCompile(`'(\w+)'`).FindAllSubmatch(m[1], -1) {
		record = append(record, string(q[1]))
	}
	if got := append(slices.Clone(record), HolderFields...); !sameSet(got, schema) {
		t.Errorf("RECORD (lua/parts) + holder fields %v, wireRun %v", got, schema)
	}

	r := StoreClaim{Job: testSpec(), ID: "j@x", Slot: 2}
	c := CompleteReq{R: &r, TraceID: "t"}
	var entry map[string]string
	if err := json.Unmarshal([]byte(c.Entry()+"}"), &entry); err != nil {
		t.Fatal(err)
	}
	fields := slices.Collect(func(yield func(string) bool) {
		for k := range entry {
			if !yield(k) {
				return
			}
		}
	})
	complete, _ := LuaFiles.ReadFile("lua/complete.lua")
	for _, q := range regexp.MustCompile(`,"(\w+)":`).FindAllSubmatch(complete, -1) {
		fields = append(fields, string(q[1]))
	}
	if !sameSet(fields, schema) {
		t.Errorf("holder entry + complete.lua's fields %v, wireRun %v", fields, schema)
	}
}

// testSpec is job "j" as the engine passes it (the job state's JobSpec).
func testSpec() *JobSpec {
	return &JobSpec{Name: "j", MetaKey: (&Redis{Prefix: "p"}).MetaKey("j"), Lease: 30 * time.Second, Concurrency: 1,
		StartingDeadline: 10 * time.Second, HistoryLimit: 20}
}
