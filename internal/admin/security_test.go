package admin_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/internal/admin"
	"github.com/solocron/solocron/internal/redact"
	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/internal/schedtest"
	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler"
)

// With a token, every /api/v1 read needs it; the probes and metrics stay
// open. Authenticate can let a request without the header in.
func TestReadsNeedTheToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, token)
		for _, path := range []string{"/api/v1/jobs", "/api/v1/jobs/tick", "/api/v1/jobs/tick/runs"} {
			a := f.do("GET", path, "")
			a.wantError(t, 401, "Bearer")
			if a.hdr.Get("WWW-Authenticate") == "" {
				t.Errorf("%s: 401 without WWW-Authenticate", path)
			}
			f.do("GET", path, "Bearer wrong").wantError(t, 403, "wrong token")
			if a := f.do("GET", path, bearer); a.code != 200 {
				t.Errorf("%s with the token: %d %s", path, a.code, a.body)
			}
		}
		for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
			if a := f.do("GET", path, ""); a.code != 200 {
				t.Errorf("%s without a token: %d, want 200 (documented as open)", path, a.code)
			}
		}

		// A console's session cookie, through the hook.
		h := admin.NewHandler(admin.Config{Jobs: f.sched.Jobs, Control: f.sched.Control(), Token: token, Logger: quiet,
			Ready: func() error { return nil }, Listen: "127.0.0.1:9090",
			Authenticate: func(r *http.Request) bool {
				c, err := r.Cookie("session")
				return err == nil && c.Value == "good"
			}})
		g := &fixture{t: t, h: h}
		if a := g.do("GET", "/api/v1/jobs", "", "Cookie", "session=good"); a.code != 200 {
			t.Errorf("a good session: %d %s", a.code, a.body)
		}
		g.do("GET", "/api/v1/jobs", "", "Cookie", "session=bad").wantError(t, 401, "Bearer")
		// The hook does not lift the cross-origin check.
		g.do("POST", "/api/v1/jobs/tick/pause", "", "Cookie", "session=good", "Sec-Fetch-Site", "cross-site").wantError(t, 403, "cross-origin")
	})
}

// A request whose Host is not the server's is refused 421, GETs and probes
// included: the DNS rebinding attack of the issue, where the page's Origin
// matches its Host.
func TestHostCheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, "") // the default: loopback, no token
		evil := []string{"Host", "rebind.evil.example:9090", "Origin", "http://rebind.evil.example:9090", "Sec-Fetch-Site", "same-origin"}
		for _, req := range [][2]string{{"GET", "/api/v1/jobs"}, {"GET", "/api/v1/jobs/tick/runs"}, {"GET", "/healthz"}, {"POST", "/api/v1/jobs/tick/pause"}} {
			f.do(req[0], req[1], "", evil...).wantError(t, 421, "admin.allowed_hosts")
		}
		if st, _ := f.sched.Control().Status(context.Background(), "tick", 1); st.Paused {
			t.Error("the rebinding page paused the job")
		}
		for _, host := range []string{"127.0.0.1:9090", "localhost:9090", "LOCALHOST", "[::1]:9090", "127.0.0.2", "ui.localhost:9090"} {
			if a := f.do("GET", "/healthz", "", "Host", host); a.code != 200 {
				t.Errorf("Host %s: %d", host, a.code)
			}
		}
		for _, host := range []string{"", "10.0.0.5:9090", "localhost.evil.example", "solocron.internal"} {
			if a := f.do("GET", "/healthz", "", "Host", host); a.code != 421 {
				t.Errorf("Host %q: %d, want 421", host, a.code)
			}
		}

		// Listed names; an unspecified listen address accepts any IP.
		h := admin.NewHandler(admin.Config{Jobs: f.sched.Jobs, Control: f.sched.Control(), Logger: quiet,
			Ready: func() error { return nil }, Listen: "0.0.0.0:9090", AllowedHosts: []string{"solocron.internal"}})
		g := &fixture{t: t, h: h}
		for host, want := range map[string]int{"solocron.internal:9090": 200, "SOLOCRON.internal": 200, "10.0.0.5:9090": 200,
			"rebind.evil.example": 421, "other.internal": 421} {
			if a := g.do("GET", "/healthz", "", "Host", host); a.code != want {
				t.Errorf("listen 0.0.0.0, Host %s: %d, want %d", host, a.code, want)
			}
		}
	})
}

// Each client gets rate_limit requests per second with bursts of
// rate_burst on /api/v1; the probes are not limited.
func TestRateLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, "")
		f.h = admin.NewHandler(admin.Config{Jobs: f.sched.Jobs, Control: f.sched.Control(), Logger: quiet,
			Ready: func() error { return nil }, Listen: "127.0.0.1:9090", RateLimit: 20, RateBurst: 40})
		from := func(ip string) int {
			r := httptest.NewRequest("GET", "/api/v1/jobs/tick", nil)
			r.Host, r.RemoteAddr = "127.0.0.1:9090", ip+":4000"
			w := httptest.NewRecorder()
			f.h.ServeHTTP(w, r)
			if w.Code == 429 && w.Header().Get("Retry-After") == "" {
				t.Error("429 without Retry-After")
			}
			return w.Code
		}
		for i := range 40 {
			if code := from("192.0.2.1"); code != 200 {
				t.Fatalf("request %d of the burst: %d", i+1, code)
			}
		}
		if code := from("192.0.2.1"); code != 429 {
			t.Errorf("request 41 of a burst of 40: %d, want 429", code)
		}
		if code := from("192.0.2.2"); code != 200 {
			t.Errorf("another client: %d, want 200", code)
		}
		if a := f.do("GET", "/healthz", "", "Host", "127.0.0.1"); a.code != 200 {
			t.Errorf("/healthz is limited: %d", a.code)
		}
		time.Sleep(time.Second) // 20 tokens come back
		ok := 0
		for range 25 {
			if from("192.0.2.1") == 200 {
				ok++
			}
		}
		if ok != 20 {
			t.Errorf("%d requests passed a second later, want 20 (the rate)", ok)
		}
	})
}

// The redactor masks the scheduler's secrets in what the records hold.
func TestAnswersAreRedacted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const secret = "store-password-xyz"
		_, c := redistest.MiniPipe(t)
		// An established job: a new one's first instants are recorded
		// missed (the data-loss floor), and this test needs a run.
		if err := c.HSetNX(context.Background(), "solocron:{leak}:meta", "epoch", "established").Err(); err != nil {
			t.Fatal(err)
		}
		leak := jobs.Func(func(ctx context.Context) error {
			fmt.Fprintln(jobs.Output(ctx), "connecting with", secret)
			return fmt.Errorf("auth %s refused", secret)
		})
		// The scheduler itself has no redactor here: records written by an
		// older replica still hold the secret.
		s, err := scheduler.New(schedtest.RedisStore(t, c), []scheduler.Job{{Name: "leak", Schedule: "@every 1s", Handler: leak}}, scheduler.WithLogger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = s.Run(ctx); close(done) }()
		defer func() { cancel(); <-done }()
		time.Sleep(2500 * time.Millisecond)
		h := admin.NewHandler(admin.Config{Jobs: s.Jobs, Control: s.Control(), Logger: quiet, Ready: func() error { return nil },
			Listen: "127.0.0.1:1", Redactor: redact.New(secret),
			Metrics: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "x{err=\""+secret+"\"} 1\n") })})
		f := &fixture{t: t, h: h}
		for _, path := range []string{"/api/v1/jobs", "/api/v1/jobs/leak", "/api/v1/jobs/leak/runs", "/metrics"} {
			a := f.do("GET", path, "")
			if a.code != 200 || strings.Contains(a.body, secret) || !strings.Contains(a.body, redact.Mask) {
				t.Errorf("%s: %d %s", path, a.code, a.body)
			}
		}
	})
}

// hookCounter counts a client's commands.
type hookCounter struct{ n atomic.Int64 }

func (c *hookCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *hookCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { c.n.Add(1); return next(ctx, cmd) }
}
func (c *hookCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { c.n.Add(int64(len(cmds))); return next(ctx, cmds) }
}

// GET /api/v1/jobs pages through the table in name order, a page per
// Redis command: 3000 jobs, the default page of 100, 30 pages, 30 commands
// (the listing read every job with 5 commands before: 15,000).
func TestListPaging(t *testing.T) {
	m, _ := redistest.Mini(t)
	c := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	var n hookCounter
	c.AddHook(&n)
	ctl := schedtest.RedisStore(t, c).Control()
	var tab []scheduler.Job
	for i := range 3000 {
		tab = append(tab, scheduler.Job{Name: fmt.Sprintf("job-%04d", 2999-i), Schedule: "@hourly", Handler: jobs.Func(func(context.Context) error { return nil })})
	}
	h := admin.NewHandler(admin.Config{Jobs: func() []scheduler.Job { return tab }, Control: ctl, Logger: quiet,
		Ready: func() error { return nil }, Listen: "127.0.0.1:1"})
	f := &fixture{t: t, h: h}
	// One warm-up page loads the script (EVALSHA, NOSCRIPT, EVAL).
	f.do("GET", "/api/v1/jobs?limit=1", "")
	n.n.Store(0)
	var names []string
	cursor, pages := "", 0
	for {
		var list admin.JobList
		a := f.do("GET", "/api/v1/jobs?cursor="+cursor, "")
		a.decode(t, &list)
		if a.code != 200 {
			t.Fatalf("page %d: %d %s", pages, a.code, a.body)
		}
		pages++
		for _, j := range list.Jobs {
			names = append(names, j.Name)
		}
		if len(list.Jobs) > 100 {
			t.Fatalf("a page of %d jobs, want at most the default 100", len(list.Jobs))
		}
		if list.NextCursor == "" {
			break
		}
		cursor = list.NextCursor
	}
	if pages != 30 || len(names) != 3000 || !slices.IsSorted(names) || slices.Compact(slices.Clone(names)) == nil || len(slices.Compact(slices.Clone(names))) != 3000 {
		t.Errorf("%d pages, %d names (sorted %v)", pages, len(names), slices.IsSorted(names))
	}
	if got := n.n.Load(); got != 30 {
		t.Errorf("listing 3000 jobs took %d Redis commands, want 30 (one per page)", got)
	}
	t.Logf("GET /api/v1/jobs over 3000 jobs: %d pages, %d Redis commands", pages, n.n.Load())
	var big admin.JobList
	f.do("GET", "/api/v1/jobs?limit=500", "").decode(t, &big)
	if len(big.Jobs) != 500 || big.NextCursor != "job-0499" {
		t.Errorf("limit=500: %d jobs, next %q", len(big.Jobs), big.NextCursor)
	}
	f.do("GET", "/api/v1/jobs?limit=501", "").wantError(t, 400, "limit must be an integer from 1 to 500")
}

// admin.tls with client_ca_file: only a client with a certificate signed by
// that CA gets an answer.
func TestMutualTLS(t *testing.T) {
	certs := redistest.NewCerts(t)
	tc, err := admin.TLSConfig(certs.ServerCert, certs.ServerKey, certs.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(admin.NewHandler(admin.Config{Logger: quiet, Ready: func() error { return nil }, Listen: "127.0.0.1:0"}))
	srv.TLS = tc
	srv.StartTLS()
	t.Cleanup(srv.Close)

	pem, err := os.ReadFile(certs.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	get := func(cfg *tls.Config) (int, error) {
		c := http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
		resp, err := c.Get(srv.URL + "/healthz")
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	if _, err := get(&tls.Config{RootCAs: roots}); err == nil {
		t.Error("a client without a certificate got an answer")
	}
	if code, err := get(certs.ClientConfig()); err != nil || code != 200 {
		t.Errorf("a client with a certificate: %d %v", code, err)
	}
	if _, err := admin.TLSConfig(certs.ServerCert, certs.ServerKey, certs.ServerKey); err == nil || strings.Contains(err.Error(), "PRIVATE KEY") {
		t.Errorf("a key as the client CA: %v", err)
	}
}
