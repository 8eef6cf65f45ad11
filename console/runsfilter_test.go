package console_test

import (
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/solocron/solocron/console"
)

// In an incident an operator asks what one replica ran (the one that died:
// what was it holding?) and what became of one job's runs: the runs page
// filters by replica and by words of the run id, keeps the choice in its
// form, and the replicas page and a run's page link a replica to its runs.
func TestRunsPageFiltersByReplicaAndName(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 1)
	for _, j := range []string{"sweep", "sweep", "evil"} {
		c.runOnce(t, j)
	}
	h := c.console(t, console.Config{})
	row := regexp.MustCompile(`<td class="run"><a href="/runs/([^"]+)"`)
	ids := func(path string) []string {
		t.Helper()
		w := get(t, h, path)
		if w.Code != 200 {
			t.Fatalf("GET %s: %d %s", path, w.Code, w.Body)
		}
		var out []string
		for _, m := range row.FindAllStringSubmatch(w.Body.String(), -1) {
			id, _ := url.PathUnescape(m[1])
			out = append(out, id)
		}
		return out
	}
	if got := ids("/runs?q=SWEEP"); len(got) != 2 || !strings.HasPrefix(got[0], "sweep@") || !strings.HasPrefix(got[1], "sweep@") {
		t.Errorf("runs?q=SWEEP lists %q, want sweep's 2 runs", got)
	}
	if got := ids("/runs?replica=replica-1"); len(got) != 3 {
		t.Errorf("runs?replica=replica-1 lists %q, want all 3 runs", got)
	}
	if got := ids("/runs?replica=replica-9&q=sweep"); len(got) != 0 {
		t.Errorf("runs?replica=replica-9 lists %q", got)
	}
	body := get(t, h, "/runs?replica=replica-9&q=swe").Body.String()
	for _, want := range []string{`name="q" type="search" value="swe"`, `<option value="replica-9" selected>replica-9</option>`, `<option value="replica-1">replica-1</option>`} {
		if !strings.Contains(body, want) {
			t.Errorf("the filtered runs page lacks %s", want)
		}
	}
	if code := get(t, h, "/runs?q="+strings.Repeat("x", 201)).Code; code != 400 {
		t.Errorf("a 201-character q: %d", code)
	}
	for _, p := range []string{"/replicas", "/runs/" + url.PathEscape(got0(t, ids("/runs?q=evil")))} {
		if body := get(t, h, p).Body.String(); !strings.Contains(body, `href="/runs?replica=replica-1"`) {
			t.Errorf("%s does not link replica-1 to its runs", p)
		}
	}
}

func got0(t *testing.T, ids []string) string {
	t.Helper()
	if len(ids) == 0 {
		t.Fatal("no run listed")
	}
	return ids[0]
}
