package main

import (
	"encoding/pem"
	"net/url"
	"os"
	"strings"

	"github.com/solocron/solocron/config"
)

// secrets lists the values the scheduler itself uses as secrets, whatever
// variable they came from: the admin token, the store's passwords (its URL,
// Sentinel's, each Redlock master's), and the contents of the TLS key files
// (the store's client key, the admin listener's key), and each
// notification's secret and URL password. The redactor masks
// them in everything that leaves the process.
func secrets(f *config.File) []string {
	out := []string{f.Admin.Token, f.Store.Sentinel.Password, urlPassword(f.Store.URL)}
	for _, u := range f.Store.Redlock.URLs {
		out = append(out, urlPassword(u))
	}
	for _, n := range f.Notifications {
		out = append(out, n.Secret, urlPassword(n.URL))
	}
	if f.Store.TLS != nil {
		out = append(out, keyFile(f.Store.TLS.KeyFile)...)
	}
	if f.Admin.TLS != nil {
		out = append(out, keyFile(f.Admin.TLS.KeyFile)...)
	}
	return out
}

func urlPassword(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return ""
	}
	p, _ := u.User.Password()
	return p
}

// keyFile returns a key file's contents whole and, for PEM, each line of
// its base64 body: a key printed in part is masked too.
func keyFile(path string) []string {
	if path == "" {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil // opening the store reports it
	}
	out := []string{string(b), strings.TrimSpace(string(b))}
	for rest := b; ; {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			break
		}
		for _, line := range strings.Split(string(pem.EncodeToMemory(blk)), "\n") {
			if len(line) >= 16 && !strings.HasPrefix(line, "-----") {
				out = append(out, line)
			}
		}
	}
	return out
}
