//go:build linux

package jobs

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

const (
	testTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	testTracestate  = "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"
)

// An HTTP job sends the run's trace context as headers; it cannot replace
// the run's own headers, nor smuggle a line break.
func TestHTTPTraceContext(t *testing.T) {
	t.Parallel()
	got := make(chan http.Header, 1)
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) { got <- r.Header.Clone() })
	ctx := NewContext(t.Context(), Info{Job: "hook", RunID: "hook@2026-11-22T04:00:00Z", FencingToken: 7})
	ctx = WithTraceContext(ctx, map[string]string{
		"traceparent":     testTraceparent,
		"tracestate":      testTracestate,
		"idempotency-key": "spoofed",
		"x-evil":          "a\r\nInjected: yes",
	})
	h := &HTTP{URL: srv.URL, Headers: map[string]string{"Traceparent": "configured"}}
	if err := h.Run(ctx); err != nil {
		t.Fatal(err)
	}
	hd := <-got
	for k, want := range map[string]string{
		"Traceparent":     testTraceparent,
		"Tracestate":      testTracestate,
		"Idempotency-Key": "hook@2026-11-22T04:00:00Z",
	} {
		if v := hd.Values(k); len(v) != 1 || v[0] != want {
			t.Errorf("header %s = %q, want [%q]", k, v, want)
		}
	}
	if hd.Get("X-Evil") != "" || hd.Get("Injected") != "" {
		t.Errorf("a header with a line break was sent: %v", hd)
	}

	// No trace context: nothing is invented, a configured header stays.
	if err := h.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	if hd := <-got; hd.Get("Traceparent") != "configured" || hd.Get("Tracestate") != "" {
		t.Errorf("without a trace context: %v", hd)
	}
}

// A command job finds the run's trace context as TRACEPARENT and
// TRACESTATE, over what the scheduler's environment or Env says.
func TestCommandTraceEnv(t *testing.T) {
	modes(t, func(t *testing.T, ctx context.Context) {
		ctx = NewContext(ctx, Info{Job: "lottery", RunID: "lottery@2026-11-21T20:00:00Z", FencingToken: 42, Attempt: 1})
		ctx = WithTraceContext(ctx, map[string]string{"traceparent": testTraceparent, "tracestate": testTracestate, "x-b3.id": "1"})
		c := helper(t, "env", "TRACEPARENT", "TRACESTATE", "X_B3_ID")
		c.Env["TRACEPARENT"] = "from Env"
		var out syncBuffer
		if err := c.Run(WithOutput(ctx, &out)); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"TRACEPARENT=" + testTraceparent + "\n", "TRACESTATE=" + testTracestate + "\n", "X_B3_ID=1\n"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("child saw:\n%s\nwant a line %q", out.String(), want)
			}
		}
	})
}
