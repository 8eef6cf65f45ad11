package browsertest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/chromedp/chromedp"
)

// A page that replaces its button with an equal one every 100 milliseconds,
// as the console's refresh does every few seconds: chromedp.Click found the
// node, the page swapped it, and the click failed with "Could not find node
// with given id" (it once failed CI's run of TestBrowserActionsFromTheKeyboard).
// Click finds the button again instead of failing, and never clicks twice.
// (So fast a swap can also move the button between a click's press and its
// release, which the browser does not count as a click: the console swaps
// every few seconds, this page ten times a second.) A swap every 10 ms was
// too fast for ten tries under CI's load.
const swapping = `<!doctype html><title>swap</title><body><p id="n">0</p><button id="b">Go</button>
<script>
let clicks = 0;
function fresh() {
  const b = document.createElement("button");
  b.id = "b"; b.textContent = "Go";
  b.onclick = () => { clicks++; document.getElementById("n").textContent = clicks; };
  document.getElementById("b").replaceWith(b);
}
fresh();
setInterval(fresh, 100);
</script>`

func TestClickFindsAReplacedNodeAgain(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, swapping)
	}))
	t.Cleanup(srv.Close)
	b := New(t)
	b.Do(t, "page", chromedp.Navigate(srv.URL), chromedp.WaitVisible(chromedp.CSS("#b")))

	const n = 100
	plainFailed := 0
	for range n {
		if _, err := chromedp.Run(b.ctx, chromedp.Click(chromedp.CSS("#b"))); err != nil {
			plainFailed++
		}
	}
	before := JS[int](t, b, `clicks`)
	for i := range n {
		b.Do(t, fmt.Sprintf("click %d", i+1), Click("#b"))
	}
	if got := JS[int](t, b, `clicks`) - before; got < n/2 || got > n {
		t.Errorf("%d clicks with Click landed %d times, want between %d and %d", n, got, n/2, n)
	}
	t.Logf("chromedp.Click alone failed %d of %d times on the same page", plainFailed, n)
}

// refound tries again only while the node is gone, and at most ten times.
func TestRefoundTriesAgainOnlyWhileTheNodeIsGone(t *testing.T) {
	gone := errors.New("Could not find node with given id (-32000)")
	other := errors.New("net::ERR_CONNECTION_REFUSED")
	for _, c := range []struct {
		name      string
		fails     []error
		wantCalls int
		wantErr   error
	}{
		{"no failure", nil, 1, nil},
		{"gone twice", []error{gone, gone}, 3, nil},
		{"another error", []error{other}, 1, other},
		{"gone for ever", slices.Repeat([]error{gone}, 20), 10, gone},
	} {
		calls := 0
		a := refound(func(context.Context, *chromedp.Target) (chromedp.Void, error) {
			calls++
			if calls <= len(c.fails) {
				return chromedp.Void{}, c.fails[calls-1]
			}
			return chromedp.Void{}, nil
		})
		_, err := a(context.Background(), nil)
		if calls != c.wantCalls || err != c.wantErr {
			t.Errorf("%s: %d calls, error %v; want %d calls, error %v", c.name, calls, err, c.wantCalls, c.wantErr)
		}
	}
}
