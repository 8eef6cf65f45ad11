package config

import (
	"net/http"
	"net/textproto"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/solocron/solocron/notify"
)

var notificationFields = []string{"name", "url", "on", "headers", "secret", "timeout"}

// notifications decodes the top-level notifications: list. It returns the
// targets and, by name, where each was written.
func (d *decoder) notifications(n *yaml.Node, path string) []notify.Target {
	if n = d.resolve(n); n == nil || isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		d.typeError(n, path, "a list of notifications (name, url, on, ...)")
		return nil
	}
	var out []notify.Target
	seen := map[string]int{}
	for i, e := range n.Content {
		ip := index(path, i)
		pairs, ok := d.section(e, ip)
		if !ok {
			continue
		}
		var t notify.Target
		has := map[string]bool{}
		d.fields(pairs, ip, notificationFields, nil, func(p pair, fp string) bool {
			v := d.resolve(p.val)
			has[p.name] = true
			switch p.name {
			case "name":
				s, ok := d.str(v, fp)
				if !ok {
					break
				}
				switch first, dup := seen[s]; {
				case !notify.ValidName(s):
					d.errorf(v, fp, "%q is not a valid notification name: [A-Za-z0-9_.-]{1,64}", clip(s))
				case dup:
					d.errorf(v, fp, "%q is already the name of notifications[%d]", s, first)
				default:
					seen[s] = i
				}
				t.Name = s
			case "url":
				s, ok := d.str(v, fp)
				if !ok {
					break
				}
				// notify.CheckURL never quotes credentials.
				if err := notify.CheckURL(s); err != nil {
					d.errorf(v, fp, "%s", err)
				}
				t.URL = s
			case "on":
				evs, ok := d.strList(v, fp)
				if !ok {
					break
				}
				if len(evs) == 0 {
					d.errorf(v, fp, "needs at least one event: %s", strings.Join(eventNames(), ", "))
				}
				for k, ev := range evs {
					if !notify.ValidEvent(notify.Event(ev)) {
						msg := "unknown event %q (one of %s)"
						if s := suggest(ev, eventNames()); s != "" {
							msg = "unknown event %q (did you mean %q?)"
							d.errorf(v.Content[k], index(fp, k), msg, clip(ev), s)
							continue
						}
						d.errorf(v.Content[k], index(fp, k), msg, clip(ev), strings.Join(eventNames(), ", "))
						continue
					}
					t.On = append(t.On, notify.Event(ev))
				}
			case "headers":
				pairs, ok := d.section(v, fp)
				if !ok {
					break
				}
				t.Headers = make(map[string]string, len(pairs))
				for _, h := range pairs {
					hp := field(fp, h.name)
					if !validToken(h.name) {
						d.errorf(h.key, hp, "%q is not a header name", clip(h.name))
						continue
					}
					if strings.HasPrefix(textproto.CanonicalMIMEHeaderKey(h.name), "Solocron-") || http.CanonicalHeaderKey(h.name) == "Content-Type" {
						d.errorf(h.key, hp, "is set by the scheduler on every notification")
						continue
					}
					s, _ := d.str(d.resolve(h.val), hp)
					t.Headers[h.name] = s
				}
			case "secret":
				// Never quoted in an error: it is a secret.
				t.Secret, _ = d.str(v, fp)
			case "timeout":
				dur, ok := d.duration(v, fp)
				if ok && dur == 0 {
					d.errorf(v, fp, "must be more than 0 (leave it out for the default %s)", notify.DefaultTimeout)
				}
				t.Timeout = dur
			default:
				return false
			}
			return true
		})
		for _, f := range []string{"name", "url", "on"} {
			if !has[f] {
				d.errorf(e, field(ip, f), "is required")
			}
		}
		out = append(out, t)
	}
	return out
}

func eventNames() []string {
	out := make([]string, len(notify.Events))
	for i, e := range notify.Events {
		out[i] = string(e)
	}
	return out
}

// validToken reports whether s is an HTTP token (a header name).
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c > 127 || !strings.ContainsRune("!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", c) {
			return false
		}
	}
	return true
}

// notifyNames decodes a job's notify: list, checking each name against the
// file's notifications.
func (d *decoder) notifyNames(n *yaml.Node, path string) ([]string, bool) {
	names, ok := d.strList(n, path)
	if !ok {
		return nil, false
	}
	n = d.resolve(n)
	for i, name := range names {
		if !slices.ContainsFunc(d.targets, func(t notify.Target) bool { return t.Name == name }) {
			known := make([]string, len(d.targets))
			for k, t := range d.targets {
				known[k] = t.Name
			}
			msg := "no notification named %q in notifications:"
			if s := suggest(name, known); s != "" {
				d.errorf(n.Content[i], index(path, i), msg+" (did you mean %q?)", clip(name), s)
			} else {
				d.errorf(n.Content[i], index(path, i), msg, clip(name))
			}
			ok = false
		}
	}
	return names, ok
}
