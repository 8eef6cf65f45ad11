package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"

	"github.com/solocron/solocron/internal/admin"
)

// An admin API without a token (or client certificates) listens on
// loopback only, and loopback is every local user's: on a shared machine
// anyone could read run records and job output and trigger jobs, which run
// as this process's user. So such an API answers only connections from
// this process's own user (and root, who can read its data directory
// anyway): the same user's browser and CLI work as before, another user
// gets 403. /healthz, /readyz and /metrics stay open to all, as with a
// token. Where the system cannot tell who connected (peerUID is for Linux),
// the API stays open and run warns, as before.

// peerKey holds, in a connection's context, its peer: who connected and
// why its requests are refused ("" when they are not).
type peerKey struct{}

type peer struct {
	uid int // -1: unknown
	why string
}

// ownerOnly wraps the admin server so that it answers only this user's
// connections (above). log: where the first refusal of each user is said
// (a scraper of another user would say it every few seconds).
func ownerOnly(srv *http.Server, log *slog.Logger) {
	me := os.Getuid()
	var said sync.Map // uid -> true: its refusal was logged
	srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		uid, err := peerUID(c.LocalAddr(), c.RemoteAddr())
		p := peer{uid: uid}
		switch {
		case err != nil:
			p.uid = -1
			p.why = "this admin API has no token and answers only its own user's connections; which user connected cannot be told (" + err.Error() + ")"
		case uid != me && uid != 0:
			p.why = fmt.Sprintf("this admin API has no token and answers only its own user (uid %d), not uid %d; set admin.token to let other users in", me, uid)
		}
		return context.WithValue(ctx, peerKey{}, p)
	}
	next := srv.Handler
	srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := r.Context().Value(peerKey{}).(peer)
		if p.why == "" || r.URL.Path == "/healthz" || r.URL.Path == "/readyz" || r.URL.Path == "/metrics" {
			next.ServeHTTP(w, r)
			return
		}
		if _, again := said.LoadOrStore(p.uid, true); !again {
			log.Warn("admin API: refused a request from another local user (said once per user)", "remote", r.RemoteAddr, "path", r.URL.Path, "why", p.why)
		}
		w.Header().Set("Cache-Control", "no-store")
		if strings.HasPrefix(r.URL.Path, "/api/") {
			admin.WriteError(w, http.StatusForbidden, p.why)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusForbidden)
		_, _ = fmt.Fprintln(w, p.why)
	})
}
