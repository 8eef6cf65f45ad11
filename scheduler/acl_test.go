package scheduler

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/solocron/solocron/scheduler/internal/store"
)

// docACL returns the commands the ACL user of docs/deployment.md allows.
func docACL(t *testing.T) []string {
	t.Helper()
	doc, err := os.ReadFile("../docs/deployment.md")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(doc)) {
		if !strings.HasPrefix(line, "ACL SETUSER solocron ") {
			continue
		}
		var allowed []string
		for _, f := range strings.Fields(line) {
			if strings.HasPrefix(f, "+") {
				allowed = append(allowed, f[1:])
			}
		}
		return allowed
	}
	t.Fatal("docs/deployment.md has no line starting with ACL SETUSER solocron")
	return nil
}

// The ACL user the deployment guide recommends allows every command the
// scripts call (Redis checks those against the user too) and every command
// the Go side sends. A real server runs the scheduler under it in
// internal/storeconn's tests.
func TestDocumentedACLCoversEveryCommand(t *testing.T) {
	allowed := docACL(t)
	need := []string{"evalsha", "eval", "script|load", "wait", "ping", "hello", "cluster|slots",
		"hmget", "hgetall", "zrange", "zcard", "lrange", "scard", "zrem", // Go side: claims, WAIT, cluster map, Control
		"set", "del", "hset", "hdel"} // notification subscriptions and their flag in the meta
	call := regexp.MustCompile(`redis\.call\('([A-Z]+)'`)
	for _, f := range luaSources(t) {
		src, _ := store.LuaFiles.ReadFile(f)
		for _, m := range call.FindAllStringSubmatch(string(src), -1) {
			need = append(need, strings.ToLower(m[1]))
		}
	}
	for _, c := range need {
		if !slices.Contains(allowed, c) {
			t.Errorf("the documented ACL user may not run %s", c)
		}
	}
}
