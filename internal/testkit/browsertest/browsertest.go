// Package browsertest drives a headless Chromium for the console's tests
// (console/ over an httptest server, cmd/scheduler over real daemons): one
// launcher, one record of what the page complained about, one way to take
// screenshots and to emulate a phone or dark mode.
//
// It is a package of its own, not part of testkit, so that only the tests
// that drive a browser build chromedp.
package browsertest

import (
	"context"
	"fmt"
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

// Chromium finds a Chromium or Chrome to drive ($SOLOCRON_CHROMIUM first),
// or skips the test unless SOLOCRON_REQUIRE_BROWSER=1 says it must be there.
func Chromium(t testing.TB) string {
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

// Browser is a headless Chromium tab at 1280×800 that records every
// console error or warning, uncaught exception and browser log error (CSP
// violations among them).
type Browser struct {
	ctx    context.Context
	mu     sync.Mutex
	errors []string
	shots  string
}

// New starts a Chromium (Chromium skips the test when there is none) with
// one tab. When the test ends the browser is closed and every error the
// page reported fails the test, but those matching one of allowed (the
// answers a test asks for on purpose, a refused action, show as failed
// loads). Screenshots go to $SOLOCRON_SCREENSHOTS, or a temporary folder.
func New(t testing.TB, allowed ...*regexp.Regexp) *Browser {
	t.Helper()
	exe := Chromium(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe), chromedp.WindowSize(1280, 800), chromedp.NoSandbox, chromedp.DisableGPU)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	b := &Browser{ctx: ctx, shots: os.Getenv("SOLOCRON_SCREENSHOTS")}
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
		for _, e := range b.Errors() {
			if !matchesAny(e, allowed) {
				t.Errorf("browser: %s", e)
			}
		}
	})
	return b
}

func matchesAny(s string, res []*regexp.Regexp) bool {
	for _, re := range res {
		if re.MatchString(s) {
			return true
		}
	}
	return false
}

// Errors are the errors and warnings the page reported so far.
func (b *Browser) Errors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.errors...)
}

// Do runs steps with a bound on their time.
func (b *Browser) Do(t testing.TB, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// Get runs one action that reads a value.
func Get[T any](t testing.TB, b *Browser, what string, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// JS evaluates a JavaScript expression.
func JS[T any](t testing.TB, b *Browser, expr string) T {
	t.Helper()
	return Get(t, b, expr, chromedp.Evaluate[T](expr))
}

// Shot saves a screenshot of the whole page as name.png.
func (b *Browser) Shot(t testing.TB, name string) {
	t.Helper()
	png := Get(t, b, "screenshot "+name, chromedp.FullScreenshot(100))
	path := filepath.Join(b.shots, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

func media(dark bool) emulation.SetEmulatedMediaParams {
	m := emulation.SetEmulatedMediaParams{}
	if dark {
		m.Features = []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}
	}
	return m
}

// Phone emulates a 390 px phone, in dark mode when dark is set; Desktop
// undoes it.
func (b *Browser) Phone(t testing.TB, dark bool) {
	t.Helper()
	b.Do(t, "phone", Send(emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{Width: 390, Height: 844, DeviceScaleFactor: 2, Mobile: true}),
		Send(emulation.SetEmulatedMedia, media(dark)))
}

// Desktop is the 1280 px window again, in dark mode when dark is set.
func (b *Browser) Desktop(t testing.TB, dark bool) {
	t.Helper()
	b.Do(t, "desktop", Send(emulation.ClearDeviceMetricsOverride, cdp.Empty{}), Send(emulation.SetEmulatedMedia, media(dark)))
}

// WaitJS waits until the JavaScript expression is true.
func WaitJS(expr string) chromedp.Action[chromedp.Void] {
	poll := chromedp.Poll[bool](expr, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(25*time.Second))
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := poll(ctx, t)
		return chromedp.Void{}, err
	}
}

// Send sends one protocol command that answers nothing.
func Send[P any](cmd cdp.Command[P, cdp.Empty], p P) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, t, cmd, p)
		return chromedp.Void{}, err
	}
}

// Settled waits for the page to leave a path containing away and finish
// loading, wherever it went, and returns its location.
func (b *Browser) Settled(t testing.TB, away string) string {
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
		time.Sleep(50 * time.Millisecond) // polling another process's page
	}
	t.Fatalf("the page never left %s", away)
	return ""
}

// Click clicks the element a CSS selector finds, as chromedp.Click does,
// and finds it again if the page's refresh replaced it between the query and
// the click. The console swaps its live parts every few seconds; a node
// chromedp found a moment before may be gone by the time it asks for the
// node's box ("Could not find node with given id"), and nothing was clicked
// then. The refresh carries focus and typed values over, so the element
// found again is the one the operator was at.
func Click(sel string) chromedp.Action[chromedp.Void] {
	return refound(chromedp.Click(chromedp.CSS(sel)))
}

// Focus focuses the element a CSS selector finds, finding it again if the
// page's refresh replaced it (see Click).
func Focus(sel string) chromedp.Action[chromedp.Void] {
	return refound(chromedp.Focus(chromedp.CSS(sel)))
}

// SetValue sets the value of the element a CSS selector finds, finding it
// again if the page's refresh replaced it (see Click).
func SetValue(sel, value string) chromedp.Action[chromedp.Void] {
	return refound(chromedp.SetValue(chromedp.CSS(sel), value))
}

// SendKeys types text into the element a CSS selector finds, finding it
// again if the page's refresh replaced it before it was focused (see Click;
// the keys go to the focused element, which a refresh keeps).
func SendKeys(sel, text string) chromedp.Action[chromedp.Void] {
	return refound(chromedp.SendKeys(chromedp.CSS(sel), text))
}

// refound runs a, and again (a few times) while it fails because the node it
// found left the document before it acted on it: such a failure comes
// before the action did anything, so trying again does not act twice.
func refound(a chromedp.Action[chromedp.Void]) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		for try := 1; ; try++ {
			_, err := a(ctx, t)
			if err == nil || try == 10 || !nodeGone(err) {
				return chromedp.Void{}, err
			}
		}
	}
}

// nodeGone tells whether err is the browser saying a node it was asked
// about is no longer in the document.
func nodeGone(err error) bool {
	s := err.Error()
	return strings.Contains(s, "Could not find node with given id") ||
		strings.Contains(s, "No node with given id found") ||
		strings.Contains(s, "Node with given id does not belong to the document")
}

// Confirm clicks the console's action button (a CSS selector) and answers
// yes to the question the console asks first for an action that stops work
// or starts many runs (Cancel, a backfill and its cancel).
func Confirm(button string) chromedp.Action[chromedp.Void] {
	steps := []chromedp.Action[chromedp.Void]{
		Click(button),
		chromedp.WaitVisible(chromedp.CSS("dialog.confirm[open] button.yes")),
		Click("dialog.confirm[open] button.yes"),
		WaitJS(`!document.querySelector("dialog.confirm[open]")`),
	}
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		for _, s := range steps {
			if _, err := s(ctx, t); err != nil {
				return chromedp.Void{}, err
			}
		}
		return chromedp.Void{}, nil
	}
}
