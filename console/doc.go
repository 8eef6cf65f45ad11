// Package console is Solocron's operator console: server-rendered pages
// over a scheduler.Control that show every job, every run and every
// replica, and act on them (Run now, Pause with a reason, Resume, Cancel and
// Retry of one run, backfill), with pages across jobs (the runs, the pools)
// and a summary strip of what needs a look.
//
// A Console is an http.Handler. The daemon serves it on its admin
// listener; a service that embeds the scheduler mounts it under a path of
// its own:
//
//	c, err := console.New(console.Config{
//		Control: sched.Control(), Jobs: sched.Jobs, Prefix: "/ops/solocron",
//		Token: os.Getenv("OPS_TOKEN"), AllowedHosts: []string{"ops.example.com"},
//	})
//	mux.Handle("/ops/solocron/", c)
//
// Mounted by a service, the console does what the daemon's admin listener
// does around it only when told: set Config.AllowedHosts (a request naming
// any other Host, a DNS-rebinding page's, gets 421) or check Host in front
// of it; set Config.Token whenever it is reachable beyond loopback; give it
// Config.Redact for the secrets it must never show, and a Control on a
// Redis client of its own so that its reads never queue in front of the
// scheduler's claims. Console.Authenticate lets an API next to it accept
// its session.
//
// Everything is rendered with html/template (job names, output and errors
// are escaped), the style sheet and the small script are embedded, and a
// strict Content-Security-Policy forbids inline script. The pages read and
// work with JavaScript off; with it, they refresh their live parts every
// few seconds and send actions without a page load.
//
// Access: with a Token, every page needs a session, bought by posting the
// token to the sign-in form: an HttpOnly, SameSite=Strict cookie that
// expires (Config.SessionTTL), signed with a key derived from the token so
// that replicas sharing a token accept each other's sessions. Actions are
// POSTs refused when cross-origin (http.CrossOriginProtection) and when
// their anti-forgery field does not match the session. ReadOnly hides and
// refuses them.
//
// Cost: the jobs page reads every job in two pipelined round trips
// (scheduler.Control.Overview), and that read is shared by every viewer
// for Config.CacheTTL (1s).
package console
