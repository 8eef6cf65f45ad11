package config

import (
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// expand returns the value of string scalar n with ${VAR} replaced from the
// environment and $$ replaced by $. A bare $VAR, or a $ followed by anything
// else, is left as written so that a shell inside a command job still sees
// it. Expansion runs on the parsed value, after YAML quoting and escapes, so
// positions in errors are those of the scalar as written.
//
// Every problem in the scalar is reported (at the scalar's position): an
// unset variable, "${" without "}", a name that is not [A-Za-z_][A-Za-z0-9_]*.
func (d *decoder) expand(n *yaml.Node, path string) (string, bool) {
	s := n.Value
	first := strings.IndexByte(s, '$')
	if first < 0 {
		return s, true
	}
	var b strings.Builder
	b.Grow(len(s))
	b.WriteString(s[:first])
	ok := true
	for i := first; i < len(s); {
		c := s[i]
		if c != '$' || i+1 == len(s) {
			b.WriteByte(c)
			i++
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i += 2
		case '{':
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				// The rest of the value is not quoted: it may be a secret.
				d.errorf(n, path, "${ has no closing } (write $${ for a literal ${)")
				return "", false
			}
			name := s[i+2 : i+2+end]
			i += end + 3
			if !envName(name) {
				msg := "${" + clip(name) + "}: " + strconv.Quote(clip(name)) + " is not a variable name"
				if strings.ContainsAny(name, ":-=?+") {
					msg += " (${VAR:-default} and similar forms are not supported)"
				}
				d.errorf(n, path, "%s", msg)
				ok = false
				continue
			}
			v, set := d.lookupEnv(name)
			if !set {
				d.errorf(n, path, "${%s}: environment variable %s is not set", name, name)
				ok = false
				continue
			}
			b.WriteString(v)
		default:
			b.WriteByte('$')
			i++
		}
	}
	if !ok {
		return "", false
	}
	return b.String(), true
}

// envName reports whether s is [A-Za-z_][A-Za-z0-9_]*.
func envName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9' {
			continue
		}
		return false
	}
	return true
}
