package console_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/solocron/solocron/console"
	"github.com/solocron/solocron/internal/testkit/browsertest"
	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler"
)

// The job's page shows its definition (command or request, timeout,
// retries, lease, overlap, pool, blackouts), and no value that may be a
// secret.
func TestBrowserJobDefinition(t *testing.T) {
	tab := append(table(),
		scheduler.Job{Name: "export", Schedule: "@every 1h", Timeout: 90 * time.Second, Retries: 2, Lease: 45 * time.Second,
			Overlap: scheduler.OverlapWait, MaxWait: time.Minute, Concurrency: 2,
			Blackouts: []scheduler.Blackout{{Cron: "0 0 * * 6", Duration: 48 * time.Hour, Timezone: "Europe/Paris"}},
			Handler: &jobs.Command{Args: []string{"./export", "--token", "argv-secret-1", "--db-password=argv-secret-2", "--verbose", "https://u:url-secret@db.example/x?key=q-secret"},
				Env: map[string]string{"API_KEY": "env-secret"}}},
		scheduler.Job{Name: "hook", Schedule: "@every 1h",
			Handler: &jobs.HTTP{Method: "post", URL: "https://hooks.example/run?sig=q-secret2", Headers: map[string]string{"Authorization": "Bearer header-secret"}, Body: "body-secret"}})
	c := newClusterOf(t, 0, tab)
	base := serve(t, c.console(t, console.Config{}))
	b := newBrowser(t)
	b.Do(t, "export", chromedp.Navigate(base+"/jobs/export"), chromedp.WaitVisible(chromedp.CSS("dl.def")))
	def := browsertest.Get(t, b, "definition", chromedp.Text(chromedp.CSS("dl.def")))
	for _, want := range []string{`"./export" "--token" "•••" "--db-password=•••" "--verbose"`, "API_KEY", "1m30s", "2 (backoff 1s, doubling)",
		"45s", "wait (max_wait 1m0s)", "0 0 * * 6 for 48h0m0s (Europe/Paris)", "https://u:xxx@db.example/x?key=xxx"} {
		if !strings.Contains(def, want) {
			t.Errorf("the definition lacks %q:\n%s", want, def)
		}
	}
	b.Shot(t, "job-definition")
	page := browsertest.JS[string](t, b, `document.documentElement.outerHTML`)
	b.Do(t, "hook", chromedp.Navigate(base+"/jobs/hook"), chromedp.WaitVisible(chromedp.CSS("dl.def")))
	def = browsertest.Get(t, b, "definition", chromedp.Text(chromedp.CSS("dl.def")))
	if !strings.Contains(def, "POST https://hooks.example/run?sig=xxx") || !strings.Contains(def, "Authorization") || !strings.Contains(def, "11 bytes") {
		t.Errorf("the HTTP job's definition:\n%s", def)
	}
	page += browsertest.JS[string](t, b, `document.documentElement.outerHTML`)
	for _, secret := range []string{"argv-secret", "url-secret", "q-secret", "env-secret", "header-secret", "body-secret"} {
		if strings.Contains(page, secret) {
			t.Errorf("a job's page shows %q", secret)
		}
	}
}
