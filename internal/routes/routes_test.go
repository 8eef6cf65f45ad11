package routes_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/solocron/solocron/internal/routes"
)

// A path's other methods are 405 with its routes' methods in Allow (HEAD
// after GET); a path with no route falls to the catch-all.
func TestNotAllowed(t *testing.T) {
	mux := http.NewServeMux()
	rt := routes.New(mux)
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	rt.Handle("GET", "/things/{id}", ok)
	rt.Handle("POST", "/things/{id}", ok)
	rt.Handle("DELETE", "/things/{id}", ok)
	rt.Handle("POST", "/things/{id}/poke", ok)
	rt.NotAllowed(func(w http.ResponseWriter, r *http.Request, allow string) {
		w.WriteHeader(http.StatusMethodNotAllowed)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNotFound) })
	for _, c := range []struct {
		method, path string
		code         int
		allow        string
	}{
		{"GET", "/things/1", 204, ""},
		{"HEAD", "/things/1", 204, ""},
		{"PUT", "/things/1", 405, "GET, HEAD, POST, DELETE"},
		{"GET", "/things/1/poke", 405, "POST"},
		{"HEAD", "/things/1/poke", 405, "POST"},
		{"POST", "/things/1/poke", 204, ""},
		{"GET", "/things/1/prod", 404, ""},
		{"GET", "/things/1/", 404, ""},
	} {
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest(c.method, c.path, nil))
		if w.Code != c.code || w.Header().Get("Allow") != c.allow {
			t.Errorf("%s %s: %d, Allow %q; want %d, Allow %q", c.method, c.path, w.Code, w.Header().Get("Allow"), c.code, c.allow)
		}
	}
	if got := rt.Allow("/things/{id}"); got != "GET, HEAD, POST, DELETE" {
		t.Errorf("Allow = %q", got)
	}
}
