// Package routes is the route table shared by the admin API and the
// console: it registers each route on an http.ServeMux by method and path,
// and answers a request for a known path with a method none of its routes
// takes 405 Method Not Allowed, with an Allow header listing those that do
// (RFC 9110 §15.5.6), instead of letting a catch-all pattern answer 404.
//
// http.ServeMux answers 405 by itself only when no pattern matches the
// request at all; a server with a catch-all "/" (the API's "no such
// endpoint", the console's "no such page") never gets there.
package routes

import (
	"net/http"
	"strings"
)

// Table registers routes on a ServeMux.
type Table struct {
	mux     *http.ServeMux
	paths   []string            // in the order of their first route
	methods map[string][]string // path -> its methods, in order
}

// New returns a table registering on mux.
func New(mux *http.ServeMux) *Table {
	return &Table{mux: mux, methods: map[string][]string{}}
}

// Handle registers h for method on path (a ServeMux path pattern, without a
// method). A GET route also answers HEAD, as ServeMux does.
func (t *Table) Handle(method, path string, h http.Handler) {
	t.mux.Handle(method+" "+path, h)
	if _, ok := t.methods[path]; !ok {
		t.paths = append(t.paths, path)
	}
	t.methods[path] = append(t.methods[path], method)
}

// HandleFunc is Handle for a function.
func (t *Table) HandleFunc(method, path string, h http.HandlerFunc) { t.Handle(method, path, h) }

// Allow is the value of the Allow header for path: its routes' methods,
// HEAD after GET.
func (t *Table) Allow(path string) string {
	var out []string
	for _, m := range t.methods[path] {
		out = append(out, m)
		if m == http.MethodGet {
			out = append(out, http.MethodHead)
		}
	}
	return strings.Join(out, ", ")
}

// NotAllowed registers, for every path routed so far, the answer to the
// other methods: the Allow header set, then refuse(w, r, allow). Call it
// once, after the routes. A path's method-less pattern is less specific
// than its routes and more specific than any catch-all, so it answers
// exactly the requests for that path no route takes.
func (t *Table) NotAllowed(refuse func(w http.ResponseWriter, r *http.Request, allow string)) {
	for _, path := range t.paths {
		allow := t.Allow(path)
		t.mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", allow)
			refuse(w, r, allow)
		})
	}
}
