package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// The console's pages as an operator sees them, in headless Chromium: each
// test serves a console over miniredis from an httptest server (no daemon),
// so a browser test costs a second, not a cluster's start. The daemon's
// own browser test (cmd/scheduler) covers three real replicas.

// chromium finds a Chromium or Chrome to drive, or skips the test unless
// SOLOCRON_REQUIRE_BROWSER=1 says it must be there.
func chromium(t *testing.T) string {
	t.Helper()
	for _, p := range []string{os.Getenv("SOLOCRON_CHROMIUM"), "/usr/lib/chromium/chromium", "chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p == "" {
			continue
		}
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	if os.Getenv("SOLOCRON_REQUIRE_BROWSER") == "1" {
		t.Fatal("SOLOCRON_REQUIRE_BROWSER=1 but no Chromium found (apt-get install chromium, or set SOLOCRON_CHROMIUM)")
	}
	t.Skip("no Chromium found: the browser tests need it (Debian package chromium); SOLOCRON_REQUIRE_BROWSER=1 makes this a failure")
	return ""
}

// browser is a headless Chromium tab at 1280×800 that records console
// errors, uncaught exceptions and CSP violations.
type browser struct {
	ctx    context.Context
	mu     sync.Mutex
	errors []string
	shots  string
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	exe := chromium(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe), chromedp.WindowSize(1280, 800), chromedp.NoSandbox, chromedp.DisableGPU)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	b := &browser{ctx: ctx, shots: os.Getenv("SOLOCRON_SCREENSHOTS")}
	if b.shots == "" {
		b.shots = t.TempDir()
	}
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		cancelTab()
		cancelAlloc()
		t.Fatalf("starting %s: %v", exe, err)
	}
	messages := chromedp.Console(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			switch m.Type {
			case chromedp.ConsoleError, chromedp.ConsoleWarning, chromedp.ConsoleException:
				b.mu.Lock()
				b.errors = append(b.errors, fmt.Sprintf("%s: %s (%s)", m.Type, m.Text, m.URL))
				b.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
		<-done
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, e := range b.errors {
			// Answers a test asks for on purpose (a refused action) are
			// logged by the browser as failed loads.
			if !strings.Contains(e, "favicon") && !regexp.MustCompile(`status of (400|403|404|409|429)\b`).MatchString(e) {
				t.Errorf("browser: %s", e)
			}
		}
	})
	return b
}

func (b *browser) do(t *testing.T, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func bget[T any](t *testing.T, b *browser, what string, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// js evaluates a JavaScript expression.
func js[T any](t *testing.T, b *browser, expr string) T {
	t.Helper()
	return bget(t, b, expr, chromedp.Evaluate[T](expr))
}

// shot saves a screenshot of the whole page as name.png.
func (b *browser) shot(t *testing.T, name string) {
	t.Helper()
	png := bget(t, b, "screenshot "+name, chromedp.FullScreenshot(100))
	path := filepath.Join(b.shots, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

// phone emulates a 390 px phone, in dark mode when dark is set; desktop
// undoes it.
func (b *browser) phone(t *testing.T, dark bool) {
	t.Helper()
	media := emulation.SetEmulatedMediaParams{}
	if dark {
		media.Features = []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}
	}
	b.do(t, "phone", send(emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{Width: 390, Height: 844, DeviceScaleFactor: 2, Mobile: true}),
		send(emulation.SetEmulatedMedia, media))
}

func (b *browser) desktop(t *testing.T, dark bool) {
	t.Helper()
	media := emulation.SetEmulatedMediaParams{}
	if dark {
		media.Features = []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}
	}
	b.do(t, "desktop", send(emulation.ClearDeviceMetricsOverride, cdp.Empty{}), send(emulation.SetEmulatedMedia, media))
}

// waitJS waits until the JavaScript expression is true.
func waitJS(expr string) chromedp.Action[chromedp.Void] {
	poll := chromedp.Poll[bool](expr, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(20*time.Second))
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := poll(ctx, t)
		return chromedp.Void{}, err
	}
}

func send[P any](cmd cdp.Command[P, cdp.Empty], p P) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, t, cmd, p)
		return chromedp.Void{}, err
	}
}

// settled waits for the page to leave a path containing away and finish
// loading, wherever it went, and returns its location.
func (b *browser) settled(t *testing.T, away string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(b.ctx, 2*time.Second)
		loc, err := chromedp.Run(ctx, chromedp.Location())
		var ready string
		if err == nil {
			ready, err = chromedp.Run(ctx, chromedp.Evaluate[string](`document.readyState`))
		}
		cancel()
		if err == nil && ready == "complete" && !strings.Contains(loc, away) {
			return loc
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the page never left %s", away)
	return ""
}

// serve serves h on a loopback httptest server.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// The open redirect of issue: /signin?next=/%09/<other host>/x sent the
// browser, once signed in, to the other host. Here the other host is a
// second local server; the browser must stay on the console.
func TestBrowserSignInStaysOnTheConsole(t *testing.T) {
	c := newCluster(t, 0)
	base := serve(t, c.console(t, consoleConfig("tok-redirect")))
	other := strings.TrimPrefix(serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "<title>elsewhere</title>elsewhere")
	})), "http://")
	b := newBrowser(t)
	for _, next := range []string{"/%09/" + other + "/x", "/%5C" + other + "/x", "/%0d%0a/" + other + "/x", "//" + other + "/x", "/\\" + other + "/x"} {
		b.do(t, "sign-in form "+next, chromedp.Navigate(base+"/signin?next="+next), chromedp.WaitVisible(chromedp.ID("token")))
		b.do(t, "sign in "+next, chromedp.SendKeys(chromedp.ID("token"), "tok-redirect"), chromedp.Submit(chromedp.ID("token")))
		if loc := b.settled(t, "/signin"); !strings.HasPrefix(loc, base+"/") {
			t.Errorf("signed in with next=%s, the browser went to %s", next, loc)
		}
		// Signed in, the form sends on at once: still home.
		b.do(t, "signed in, "+next, chromedp.Navigate(base+"/signin?next="+next))
		if loc := b.settled(t, "/signin"); !strings.HasPrefix(loc, base+"/") {
			t.Errorf("signed in, next=%s sent the browser to %s", next, loc)
		}
		b.do(t, "sign out", chromedp.Click(chromedp.CSS(`form.signout button`)), chromedp.WaitVisible(chromedp.ID("token")))
	}
}
