package console_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/solocron/solocron/console"
	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/internal/testkit/browsertest"
	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler"
)

// blockTable is a job whose runs last until they are cancelled.
//
// Its lease is 10 s, not the 3 s it was: under -race on a loaded machine
// (CI runs two packages at once beside Chromium) a renewal came late enough
// for a 3 s lease to be lost, and the run the test was looking at ended
// lease_lost while a queued one started in its place.
func blockTable() []scheduler.Job {
	return append(table(), scheduler.Job{Name: "block", Schedule: "@every 1h", Lease: 10 * time.Second,
		Handler: jobs.Func(func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })})
}

// waitRunning triggers job and waits until its run is running.
func (c *cluster) waitRunning(t *testing.T, job string) string {
	t.Helper()
	id, err := c.ctl.Trigger(t.Context(), job)
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, id+" to run", func() bool {
		r, _ := c.ctl.Get(t.Context(), id)
		return r != nil && r.Outcome == scheduler.Running
	})
	return id
}

// Cancel from the job page's "Running now", Retry from the run's page,
// Cancel from the retry's page: each reaches the record (with who asked),
// and the pages follow.
func TestBrowserCancelAndRetry(t *testing.T) {
	c := newClusterOf(t, 2, blockTable())
	base := serve(t, c.console(t, console.Config{}))
	id := c.waitRunning(t, "block")
	b := newBrowser(t)
	b.Do(t, "job page", chromedp.Navigate(base+"/jobs/block"),
		chromedp.WaitVisible(chromedp.CSS(`form[action$="/cancel"] button`)),
		browsertest.Confirm(`form[action$="/cancel"] button`),
		browsertest.WaitJS(`document.getElementById("flash").innerText.includes("Cancel asked")`),
		browsertest.WaitJS(`document.querySelector("table.history").innerText.includes("cancelled")`))
	r, _ := c.ctl.Get(t.Context(), id)
	if r == nil || r.Outcome != scheduler.Cancelled || r.CancelledBy != "console from 127.0.0.1" {
		t.Fatalf("after Cancel on the job page: %+v", r)
	}
	b.Do(t, "run page", chromedp.Navigate(base+"/runs/"+url.PathEscape(id)),
		chromedp.WaitVisible(chromedp.ID("cancelled")))
	if note := browsertest.Get(t, b, "note", chromedp.Text(chromedp.ID("cancelled"))); !strings.Contains(note, "Cancel asked by console from 127.0.0.1") {
		t.Errorf("the cancelled run's page says %q", note)
	}
	if browsertest.JS[bool](t, b, `!!document.querySelector('form[action$="/cancel"]')`) {
		t.Error("an ended run offers Cancel")
	}
	b.Shot(t, "run-cancelled")
	b.Do(t, "retry", browsertest.Click(`form[action$="/retry"] button`))
	loc := b.Settled(t, "/runs/"+url.PathEscape(id))
	again, _ := url.PathUnescape(strings.TrimPrefix(strings.SplitN(loc, "?", 2)[0], base+"/runs/"))
	if !strings.HasPrefix(again, "block@manual-") {
		t.Fatalf("after Retry the browser is at %s", loc)
	}
	b.Do(t, "the retry's page", chromedp.WaitVisible(chromedp.ID("retry-of")),
		browsertest.WaitJS(`document.querySelector(".outcome").innerText.includes("running")`),
		chromedp.WaitVisible(chromedp.CSS(`form[action$="/cancel"] button`)))
	if txt := browsertest.Get(t, b, "retry-of", chromedp.Text(chromedp.ID("retry-of"))); !strings.Contains(txt, id) {
		t.Errorf("the retry's page says %q", txt)
	}
	b.Do(t, "cancel the retry", browsertest.Confirm(`form[action$="/cancel"] button`),
		browsertest.WaitJS(`document.querySelector(".outcome").innerText.includes("cancelled")`))
	if r, _ := c.ctl.Get(t.Context(), again); r == nil || r.Outcome != scheduler.Cancelled || r.RetryOf != id {
		t.Errorf("the retry after Cancel: %+v", r)
	}
	if r, _ := c.ctl.Get(t.Context(), id); r == nil || r.RetriedAs != again {
		t.Errorf("the first run does not link its retry: %+v", r)
	}
}

// The run actions are forms like the job's: a forged anti-forgery field is
// refused, and a read-only console offers and takes none.
func TestRunActionsGuarded(t *testing.T) {
	t.Parallel()
	c := newClusterOf(t, 1, blockTable())
	id := c.waitRunning(t, "block")
	h := c.console(t, console.Config{})
	req := func(h http.Handler, form url.Values) int {
		r := httpPost("/runs/"+url.PathEscape(id)+"/cancel", form)
		w := httptestRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	if code := req(h, url.Values{"csrf": {"forged"}}); code != http.StatusForbidden {
		t.Errorf("cancel with a forged form field: %d", code)
	}
	ro := c.console(t, console.Config{ReadOnly: true})
	if body := get(t, ro, "/runs/"+url.PathEscape(id)).Body.String(); strings.Contains(body, "/cancel") {
		t.Error("a read-only console offers Cancel")
	}
	if code := req(ro, nil); code != http.StatusForbidden {
		t.Errorf("cancel on a read-only console: %d", code)
	}
	if r, _ := c.ctl.Get(t.Context(), id); r.CancelledBy != "" {
		t.Errorf("a refused request asked the cancel: %+v", r)
	}
}

// A refused action's error page (where a browser without JavaScript lands)
// links back to the job or run it was asked on, besides the jobs; not to a
// job that does not exist.
func TestRefusedActionLeadsBack(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 0)
	h := c.console(t, console.Config{})
	csrf := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(get(t, h, "/jobs/sweep").Body.String())
	if csrf == nil {
		t.Fatal("the job page has no form")
	}
	for _, tc := range []struct {
		path string
		form url.Values
		code int
		back string
	}{
		{"/jobs/sweep/backfill", url.Values{"from": {"2026-11-20T10:00"}, "to": {"2026-11-20T09:00"}}, http.StatusBadRequest, `<a href="/jobs/sweep">Back to job sweep</a>`},
		{"/jobs/no-such-job/trigger", nil, http.StatusNotFound, ""},
		{"/runs/sweep@2026-11-20T10:00:00Z/cancel", nil, http.StatusNotFound, ""},
	} {
		form := url.Values{"csrf": {csrf[1]}}
		for k, v := range tc.form {
			form[k] = v
		}
		w := httptestRecorder()
		h.ServeHTTP(w, httpPost(tc.path, form))
		body := w.Body.String()
		if w.Code != tc.code || !strings.Contains(body, `<a href="/">Back to the jobs</a>`) {
			t.Errorf("POST %s: %d, want %d and a link to the jobs:\n%s", tc.path, w.Code, tc.code, body)
		}
		if tc.back != "" && !strings.Contains(body, tc.back) {
			t.Errorf("POST %s: no %s in\n%s", tc.path, tc.back, body)
		}
		if tc.back == "" && (strings.Contains(body, "Back to job") || strings.Contains(body, "Back to run")) {
			t.Errorf("POST %s links back to what does not exist:\n%s", tc.path, body)
		}
	}
}

// A job whose first run is in flight has no last run yet, but it is no
// job that "never ran" either, on the jobs page or its own.
func TestFirstRunInFlightIsNotNeverRan(t *testing.T) {
	t.Parallel()
	c := newClusterOf(t, 1, blockTable())
	c.waitRunning(t, "block")
	h := c.console(t, console.Config{})
	for _, p := range []string{"/?q=block", "/jobs/block"} {
		body := get(t, h, p).Body.String()
		if strings.Contains(body, "never ran</span>") || !strings.Contains(body, `<span class="outcome none">none ended yet</span>`) {
			t.Errorf("%s says of block, whose first run is in flight, that it never ran", p)
		}
	}
}

// The page of a retry just requested shows it "requested, not picked up
// yet" until a replica claims it; an address made up to look like one (a
// job not in the table, a suffix Retry never draws) is 404, not a run
// shown requested for ever.
func TestPendingRetryPageOnlyForItsShape(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 0)
	h := c.console(t, console.Config{})
	for id, code := range map[string]int{
		"evil@manual-t5z0k90123456789abc":        200,
		"evil@manual-" + url.PathEscape(hostile): 404,
		"nojob@manual-t5z0k90123456789abc":       404,
		"evil@manual-":                           404,
		// The shape scheduler.newManualID draws, not merely its letters
		// (scheduler.IsManualRunID): the random part is lower case hex.
		"evil@manual-zzzzzzzzzzzzzzzz":    404,
		"evil@manual-t5z0k90123456789ABC": 404,
		"evil@manual-00000000":            404,
	} {
		w := get(t, h, "/runs/"+id+"?done=retry")
		if w.Code != code || (code == 200) != strings.Contains(w.Body.String(), "requested, not picked up yet") {
			t.Errorf("%.40s: %d, want %d", id, w.Code, code)
		}
	}
}
