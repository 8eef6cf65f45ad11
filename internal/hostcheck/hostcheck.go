// Package hostcheck decides which Host headers a server answers to: the
// defence against DNS rebinding shared by the admin API and the console.
//
// A page that rebinds its own name to the server's address sends that name
// as its Host; a server that answers only to its listen address, loopback
// names, IP addresses and the names it was told about never serves it.
package hostcheck

import (
	"net"
	"strings"
)

// Check decides which Host headers are allowed.
type Check struct {
	names   map[string]bool // lower case, no port
	anyIP   bool            // listening on every address: any IP literal is ours
	listenI net.IP
}

// New returns the check for a server listening on listen (host:port) that
// also answers to the names in allowed (port ignored). Loopback names
// (localhost, *.localhost, 127.0.0.0/8, ::1) are always allowed. When
// listen's host is an unspecified address (0.0.0.0, ::) or empty, any IP
// address is an allowed Host: a rebinding page always sends a name.
func New(listen string, allowed []string) *Check {
	h := &Check{names: map[string]bool{"localhost": true}}
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		host = listen
	}
	host = strings.ToLower(strings.Trim(host, "[]"))
	if ip := net.ParseIP(host); ip != nil {
		h.anyIP = ip.IsUnspecified()
		h.listenI = ip
	} else if host == "" {
		h.anyIP = true
	} else {
		h.names[host] = true
	}
	for _, n := range allowed {
		h.names[strings.ToLower(strings.TrimSuffix(n, "."))] = true
	}
	return h
}

// Allowed reports whether the server answers to Host hostport (with or
// without a port).
func (h *Check) Allowed(hostport string) bool {
	host := hostport
	if hp, _, err := net.SplitHostPort(hostport); err == nil {
		host = hp
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if host == "" {
		return false
	}
	if ip := net.ParseIP(host); ip != nil {
		return ip.IsLoopback() || h.anyIP || ip.Equal(h.listenI)
	}
	return h.names[host] || strings.HasSuffix(host, ".localhost")
}

// Clip shortens a Host for an error message.
func Clip(h string) string {
	if len(h) > 100 {
		return h[:100] + "..."
	}
	return h
}
