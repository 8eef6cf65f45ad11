package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"gopkg.in/yaml.v3"

	"github.com/solocron/solocron/scheduler"
)

var (
	topFields      = []string{"replica_id", "store", "admin", "notifications", "pools", "defaults", "jobs"}
	storeFields    = []string{"url", "mode", "sentinel", "cluster", "redlock", "tls", "key_prefix", "max_clock_skew", "min_replicas_ack", "min_replicas_ack_timeout", "data_dir"}
	tlsFields      = []string{"ca_file", "cert_file", "key_file", "server_name", "insecure_skip_verify"}
	sentinelFields = []string{"master", "addrs", "username", "password"}
	clusterFields  = []string{"addrs"}
	redlockFields  = []string{"urls"}
	adminFields    = []string{"listen", "token", "allowed_hosts", "rate_limit", "rate_burst", "tls", "read_only", "trace_url"}
	adminTLSFields = []string{"cert_file", "key_file", "client_ca_file"}
	modes          = []string{"standalone", "sentinel", "cluster", "redlock"}
)

// top walks the document's root mapping.
func (d *decoder) top(f *File, root *yaml.Node) {
	if root.Kind != yaml.MappingNode {
		d.errorf(root, "yaml", "expected a mapping (replica_id, store, admin, defaults, jobs) at the top of the file, got %s", describe(root))
		return
	}
	var store, admin, notifications, pools, defaults, jobList *pair
	d.fields(d.mapping(root, ""), "", topFields, topHint, func(p pair, path string) bool {
		switch p.name {
		case "replica_id":
			if id, ok := d.str(p.val, path); ok && id != "" {
				if err := CheckReplicaID(id); err != nil {
					d.errorf(p.val, path, "%v", err)
				}
				f.ReplicaID = id
			}
		case "store":
			store = &p
		case "admin":
			admin = &p
		case "notifications":
			notifications = &p
		case "pools":
			pools = &p
		case "defaults":
			defaults = &p
		case "jobs":
			jobList = &p
		default:
			// x-* keys hold YAML anchors for use elsewhere in the file, as
			// in Compose files; they are otherwise ignored.
			return strings.HasPrefix(p.name, "x-")
		}
		return true
	})
	// The store comes first: whether it is in redlock mode decides what a
	// job may ask for.
	f.Store = Store{Mode: DefaultMode, KeyPrefix: DefaultKeyPrefix, MaxClockSkew: DefaultMaxClockSkew}
	modeOK := true
	if store != nil {
		modeOK = d.store(&f.Store, store.val, "store")
	}
	f.Admin = Admin{RateLimit: DefaultAdminRateLimit, RateBurst: DefaultAdminRateBurst}
	if admin != nil {
		d.admin(&f.Admin, admin.val, "admin")
	}
	// Before the jobs: their notify: names these.
	if notifications != nil {
		f.Notifications = d.notifications(notifications.val, "notifications")
		d.targets = f.Notifications
		if modeOK && f.Store.Mode == "redlock" && len(f.Notifications) > 0 {
			d.errorf(notifications.key, "notifications", "need one Redis deployment: in redlock mode every master would queue each event")
		}
	}
	// Before the jobs: their pool: names these.
	if pools != nil {
		f.Pools = d.poolSizes(pools.val, "pools")
		d.pools = f.Pools
		if modeOK && f.Store.Mode == "redlock" && len(f.Pools) > 0 {
			d.errorf(pools.key, "pools", "need one Redis deployment: in redlock mode each master would count a pool's slots apart")
		}
	}
	def := newDraft("defaults", nil)
	if defaults != nil {
		d.defaults(def, defaults.val)
	}
	defer d.checkDefaultZone(def)
	if jobList == nil {
		d.errorf(root, "jobs", "is required (write jobs: [] for a replica that runs no jobs)")
		return
	}
	mode := ""
	if modeOK {
		mode = f.Store.Mode
	}
	f.Jobs = d.jobs(jobList.val, def, mode)
}

// topHint places a field written at the top level that belongs elsewhere.
func topHint(name string) string {
	switch {
	case slices.Contains(jobFields, name):
		return name + " is a job field: it goes in an entry of jobs: or under defaults:"
	case slices.Contains(storeFields, name):
		return name + " belongs under store:"
	case slices.Contains(adminFields, name):
		return name + " belongs under admin:"
	case name == "notify":
		return "notify is a job field; the targets it names go under notifications:"
	}
	return ""
}

func storeHint(name string) string {
	switch {
	case name == "master" || name == "password" || name == "username":
		return name + " belongs under store.sentinel:"
	case name == "addrs":
		return "addrs belongs under store.sentinel: or store.cluster:"
	case name == "urls":
		return "urls belongs under store.redlock:"
	case slices.Contains(tlsFields, name):
		return name + " belongs under store.tls:"
	}
	return ""
}

// store decodes the store section into s (which holds the defaults) and
// reports whether the mode is known, so jobs can be checked against it:
// the fields, then the URL against the mode, then what the mode needs.
func (d *decoder) store(s *Store, n *yaml.Node, path string) (modeOK bool) {
	pairs, ok := d.section(n, path)
	if !ok {
		return false
	}
	sec := storeSection{keys: make(map[string]*yaml.Node), modeOK: true}
	d.fields(pairs, path, storeFields, storeHint, func(p pair, fp string) bool {
		if !d.storeField(s, &sec, p, fp) {
			return false
		}
		sec.keys[p.name] = p.key
		return true
	})

	if sec.url != nil && s.URL != "" {
		// Only standalone mode dials the URL's host; sentinel and cluster
		// mode take credentials, database and TLS (rediss) from it.
		d.redisURL(sec.url, field(path, "url"), s.URL, !sec.modeOK || s.Mode == "standalone")
	}
	if !sec.modeOK {
		return false
	}
	d.storeModeNeeds(s, &sec, path)
	d.storeExtras(s, sec.keys, path)
	return true
}

// storeSection is what decoding the store section learnt beyond Store:
// where each key is, the url's node, whether the mode is known, and which
// fields of each mode's subsection were there.
type storeSection struct {
	keys                                map[string]*yaml.Node
	url                                 *yaml.Node
	modeOK                              bool
	sentinelHas, clusterHas, redlockHas map[string]fieldState
}

// storeField decodes one field of the store section into s; false for a
// name that is not a store field.
func (d *decoder) storeField(s *Store, sec *storeSection, p pair, fp string) bool {
	switch p.name {
	case "url":
		sec.url = d.resolve(p.val)
		s.URL, _ = d.str(sec.url, fp)
	case "mode":
		v := d.resolve(p.val)
		m, ok := d.str(v, fp)
		switch {
		case !ok:
			sec.modeOK = false
		case slices.Contains(modes, m):
			s.Mode = m
		default:
			sec.modeOK = false
			msg := fmt.Sprintf("%q is not one of standalone, sentinel, cluster, redlock", clip(m))
			if sug := suggest(m, modes); sug != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", sug)
			}
			d.errorf(v, fp, "%s", msg)
		}
	case "sentinel":
		sec.sentinelHas = d.sentinel(&s.Sentinel, p.val, fp)
	case "cluster":
		sec.clusterHas = d.subsection(p.val, fp, clusterFields, func(p pair, fp string) (ok bool) {
			s.Cluster.Addrs, ok = d.addrs(p.val, fp)
			return ok
		})
	case "redlock":
		sec.redlockHas = d.subsection(p.val, fp, redlockFields, func(p pair, fp string) (ok bool) {
			s.Redlock.URLs, ok = d.redlockURLs(p.val, fp)
			return ok
		})
	case "tls":
		s.TLS = d.tls(p.val, fp)
	default:
		return d.storeSetting(s, p, fp)
	}
	return true
}

// storeSetting decodes one of the store's scalar settings into s; false
// for a name that is not one.
func (d *decoder) storeSetting(s *Store, p pair, fp string) bool {
	switch p.name {
	case "key_prefix":
		v := d.resolve(p.val)
		prefix, ok := d.str(v, fp)
		if !ok {
			break
		}
		switch err := scheduler.CheckKeyPrefix(prefix); {
		case prefix == "":
			d.errorf(v, fp, "%v (leave it out for the default %q)", err, DefaultKeyPrefix)
		case err != nil:
			d.add(v.Line, v.Column, fp, err)
		default:
			s.KeyPrefix = prefix
		}
	case "max_clock_skew":
		v := d.resolve(p.val)
		skew, ok := d.duration(v, fp)
		switch {
		case !ok:
		case skew == 0:
			d.errorf(v, fp, "must be greater than 0: replicas' clocks are never exactly equal (leave it out for the default %s)", DefaultMaxClockSkew)
		default:
			s.MaxClockSkew = skew
		}
	case "min_replicas_ack":
		v := d.resolve(p.val)
		n, ok := d.integer(v, fp)
		switch {
		case !ok:
		case n < 0:
			d.errorf(v, fp, "must be 0 (off) or more, got %d", n)
		default:
			s.MinReplicasAck = n
		}
	case "min_replicas_ack_timeout":
		v := d.resolve(p.val)
		t, ok := d.duration(v, fp)
		switch {
		case !ok:
		case t == 0:
			d.errorf(v, fp, "must be greater than 0 (leave it out for the default %s)", DefaultMinReplicasAckTimeout)
		default:
			s.MinReplicasAckTimeout = t
		}
	case "data_dir":
		v := d.resolve(p.val)
		dir, ok := d.str(v, fp)
		switch {
		case !ok:
		case dir == "":
			d.errorf(v, fp, "must not be empty (leave it out for the default: $STATE_DIRECTORY, else beside the table)")
		case !filepath.IsAbs(dir) && d.file != "":
			s.DataDir = filepath.Join(filepath.Dir(d.file), dir)
		default:
			s.DataDir = dir
		}
	default:
		return false
	}
	return true
}

// storeModeNeeds checks the sections against the mode: a mode's own
// section only with it, and the section and fields the mode requires.
func (d *decoder) storeModeNeeds(s *Store, sec *storeSection, path string) {
	keys := sec.keys
	for _, name := range []string{"sentinel", "cluster", "redlock"} {
		if k := keys[name]; k != nil && s.Mode != name {
			d.errorf(k, field(path, name), "is used only with mode: %s (the mode is %s)", name, s.Mode)
		}
	}
	// need reports a section or a field the mode requires: at the section's
	// key when it is there, else at mode:.
	need := func(section string, has map[string]fieldState, sub, msg string) {
		switch {
		case keys[section] == nil:
			d.errorf(keys["mode"], field(path, section), "is required with mode: %s (%s)", s.Mode, msg)
		case has != nil && has[sub] == absent:
			d.errorf(keys[section], field(field(path, section), sub), "is required with mode: %s", s.Mode)
		}
	}
	switch s.Mode {
	case "sentinel":
		need("sentinel", sec.sentinelHas, "master", "master and addrs")
		need("sentinel", sec.sentinelHas, "addrs", "master and addrs")
		if sec.sentinelHas["addrs"] == valid && len(s.Sentinel.Addrs) == 0 {
			d.errorf(keys["sentinel"], path+".sentinel.addrs", "needs at least one host:port")
		}
	case "cluster":
		need("cluster", sec.clusterHas, "addrs", "addrs: at least one host:port")
		if sec.clusterHas["addrs"] == valid && len(s.Cluster.Addrs) == 0 {
			d.errorf(keys["cluster"], path+".cluster.addrs", "needs at least one host:port")
		}
	case "redlock":
		need("redlock", sec.redlockHas, "urls", "urls: at least 3 independent servers")
		if sec.redlockHas["urls"] == valid && len(s.Redlock.URLs) < 3 {
			d.errorf(keys["redlock"], path+".redlock.urls", "needs at least 3 independent servers (has %d): a majority of them must agree", len(s.Redlock.URLs))
		}
		if keys["url"] != nil {
			d.errorf(keys["url"], field(path, "url"), "is not used with mode: redlock; list every server under redlock.urls")
		}
	}
}

// storeExtras checks tls and min_replicas_ack against the mode.
func (d *decoder) storeExtras(s *Store, keys map[string]*yaml.Node, path string) {
	embedded := s.Mode == "standalone" && s.URL == ""
	if k := keys["tls"]; k != nil && s.TLS != nil {
		tlsURL := strings.HasPrefix(s.URL, "rediss://")
		switch {
		case embedded:
			d.errorf(k, field(path, "tls"), "needs store.url: the embedded in-process store has no TLS")
		case s.Mode == "redlock" && !slices.ContainsFunc(s.Redlock.URLs, func(u string) bool { return strings.HasPrefix(u, "rediss://") }):
			d.errorf(k, field(path, "tls"), "applies to the rediss:// URLs of redlock.urls, and none is rediss://")
		case s.Mode != "redlock" && s.URL != "" && !tlsURL:
			// Sentinel and Cluster mode need no URL: there, tls alone turns
			// TLS on. A redis:// URL next to it says the opposite.
			d.errorf(k, field(path, "tls"), "is set, but store.url is redis://: write rediss:// to use TLS")
		}
	}
	if k := keys["min_replicas_ack"]; k != nil && s.MinReplicasAck > 0 {
		switch {
		case embedded:
			d.errorf(k, field(path, "min_replicas_ack"), "needs store.url: the embedded in-process store has no replicas")
		case s.Mode == "redlock":
			d.errorf(k, field(path, "min_replicas_ack"), "is not used with mode: redlock: its masters are independent; a majority of them is the acknowledgement")
		}
	}
	if k := keys["data_dir"]; k != nil && !embedded {
		d.errorf(k, field(path, "data_dir"), "is used only by the embedded store (no store.url); Redis keeps its own data")
	}
	if k := keys["min_replicas_ack_timeout"]; k != nil && s.MinReplicasAck == 0 {
		d.errorf(k, field(path, "min_replicas_ack_timeout"), "is used only with min_replicas_ack above 0")
	}
	if s.MinReplicasAck > 0 && s.MinReplicasAckTimeout == 0 {
		s.MinReplicasAckTimeout = DefaultMinReplicasAckTimeout
	}
}

// tls decodes store.tls. Files must exist when the table is loaded (they are
// read when the store is opened); relative paths are relative to the
// working directory.
func (d *decoder) tls(n *yaml.Node, path string) *TLS {
	t := &TLS{}
	var certKey, keyKey *yaml.Node
	has := d.subsection(n, path, tlsFields, func(p pair, fp string) (ok bool) {
		v := d.resolve(p.val)
		file := func(dst *string) bool { return d.existingFile(v, fp, dst) }
		switch p.name {
		case "ca_file":
			return file(&t.CAFile)
		case "cert_file":
			certKey = p.key
			return file(&t.CertFile)
		case "key_file":
			keyKey = p.key
			return file(&t.KeyFile)
		case "server_name":
			t.ServerName, ok = d.str(v, fp)
		case "insecure_skip_verify":
			t.InsecureSkipVerify, ok = d.boolean(v, fp)
		}
		return ok
	})
	if has == nil {
		return nil
	}
	switch {
	case certKey != nil && keyKey == nil:
		d.errorf(certKey, field(path, "key_file"), "is required with cert_file (a client certificate needs its key)")
	case keyKey != nil && certKey == nil:
		d.errorf(keyKey, field(path, "cert_file"), "is required with key_file (a client key needs its certificate)")
	}
	return t
}

// checkFile says whether path names a regular file. It does not read it: a
// table naming a device must not hang the loader.
func checkFile(path string) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%q: no such file", clip(path))
	case err != nil:
		return fmt.Errorf("%q: %v", clip(path), errors.Unwrap(err))
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%q is not a regular file", clip(path))
	}
	return nil
}

// fieldState is what a store subsection says about one of its fields.
type fieldState int

const (
	absent fieldState = iota
	valid
	invalid // present, and already reported
)

// subsection walks a small mapping of store fields; fn decodes one and says
// whether it was valid.
func (d *decoder) subsection(n *yaml.Node, path string, known []string, fn func(p pair, path string) bool) map[string]fieldState {
	has := make(map[string]fieldState)
	pairs, ok := d.section(n, path)
	if !ok {
		return nil
	}
	d.fields(pairs, path, known, nil, func(p pair, fp string) bool {
		if !slices.Contains(known, p.name) {
			return false
		}
		has[p.name] = invalid
		if fn(p, fp) {
			has[p.name] = valid
		}
		return true
	})
	return has
}

func (d *decoder) sentinel(s *Sentinel, n *yaml.Node, path string) map[string]fieldState {
	return d.subsection(n, path, sentinelFields, func(p pair, fp string) (ok bool) {
		switch p.name {
		case "master":
			v := d.resolve(p.val)
			if s.Master, ok = d.str(v, fp); ok && s.Master == "" {
				d.errorf(v, fp, "must not be empty")
				return false
			}
		case "addrs":
			s.Addrs, ok = d.addrs(p.val, fp)
		case "username":
			s.Username, ok = d.str(p.val, fp)
		case "password":
			s.Password, ok = d.str(p.val, fp)
		}
		return ok
	})
}

// addrs decodes a list of host:port.
func (d *decoder) addrs(n *yaml.Node, path string) ([]string, bool) {
	n = d.resolve(n)
	list, ok := d.strList(n, path)
	if !ok {
		return nil, false
	}
	for i, a := range list {
		if err := checkHostPort(a, true); err != nil {
			d.add(n.Content[i].Line, n.Content[i].Column, index(path, i), err)
			ok = false
		}
	}
	return list, ok
}

// redlockURLs decodes the list of redlock servers.
func (d *decoder) redlockURLs(n *yaml.Node, path string) ([]string, bool) {
	n = d.resolve(n)
	list, ok := d.strList(n, path)
	if !ok {
		return nil, false
	}
	seen := make(map[string]int)
	for i, u := range list {
		e := n.Content[i] // an alias stands where it is written
		if !d.redisURL(e, index(path, i), u, true) {
			ok = false
			continue
		}
		if first, dup := seen[u]; dup {
			d.errorf(e, index(path, i), "is the same server as %s: redlock needs independent servers", index(path, first))
			ok = false
		}
		seen[u] = i
	}
	return list, ok
}

// redisURL checks a redis:// or rediss:// URL. Messages never repeat the URL:
// it may hold a password.
func (d *decoder) redisURL(n *yaml.Node, path, raw string, needHost bool) bool {
	u, err := url.Parse(raw)
	bad := func(format string, args ...any) bool {
		d.errorf(n, path, format, args...)
		return false
	}
	switch {
	case err != nil:
		return bad("is not a valid URL (expected redis://[user:password@]host:port[/db])")
	case u.Scheme != "redis" && u.Scheme != "rediss":
		if u.Scheme == "" {
			return bad("must start with redis:// or rediss://")
		}
		return bad("scheme %q is not redis or rediss", clip(u.Scheme))
	case u.Opaque != "":
		return bad("must start with %s:// (expected %s://[user:password@]host:port[/db])", u.Scheme, u.Scheme)
	case needHost && u.Host == "":
		return bad("has no host (expected %s://[user:password@]host:port[/db])", u.Scheme)
	}
	if db := strings.TrimPrefix(u.Path, "/"); db != "" {
		if n, err := strconv.Atoi(db); err != nil || n < 0 {
			return bad("database %q is not a number", clip(db))
		}
	}
	return true
}

// checkHostPort checks "host:port"; needHost says whether the host may be
// left out (":9090" listens on every interface).
func checkHostPort(s string, needHost bool) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Errorf("%q is not host:port", clip(s))
	}
	if needHost && host == "" {
		return fmt.Errorf("%q has no host", clip(s))
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return fmt.Errorf("port %q is not a number from 0 to 65535", clip(port))
	}
	return nil
}

func (d *decoder) admin(a *Admin, n *yaml.Node, path string) {
	pairs, _ := d.section(n, path)
	d.fields(pairs, path, adminFields, nil, func(p pair, fp string) bool {
		v := d.resolve(p.val)
		switch p.name {
		case "listen":
			listen, ok := d.str(v, fp)
			if !ok || listen == "" {
				break
			}
			if err := checkHostPort(listen, false); err != nil {
				d.add(v.Line, v.Column, fp, err)
			}
			a.Listen = listen
		case "token":
			token, ok := d.str(v, fp)
			if !ok {
				break
			}
			// Never quote the token: errors end up in logs.
			if strings.ContainsFunc(token, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) {
				d.add(v.Line, v.Column, fp, errors.New("must not contain whitespace or control characters (a trailing newline from a secret file?)"))
			}
			a.Token = token
		case "read_only":
			ro, ok := d.boolean(v, fp)
			if ok {
				a.ReadOnly = ro
			}
		case "trace_url":
			u, ok := d.str(v, fp)
			if !ok || u == "" {
				break
			}
			if err := checkTraceURL(u); err != nil {
				d.add(v.Line, v.Column, fp, err)
				break
			}
			a.TraceURL = u
		case "allowed_hosts":
			hosts, ok := d.strList(v, fp)
			if !ok {
				break
			}
			for i, h := range hosts {
				if err := checkAllowedHost(h); err != nil {
					d.add(v.Content[i].Line, v.Content[i].Column, index(fp, i), err)
				}
			}
			a.AllowedHosts = hosts
		case "rate_limit":
			n, ok := d.integer(v, fp)
			switch {
			case !ok:
			case n < 0:
				d.errorf(v, fp, "must be 0 (no limit) or more requests per second, got %d", n)
			default:
				a.RateLimit = n
			}
		case "rate_burst":
			n, ok := d.integer(v, fp)
			switch {
			case !ok:
			case n < 1:
				d.errorf(v, fp, "must be at least 1, got %d", n)
			default:
				a.RateBurst = n
			}
		case "tls":
			a.TLS = d.adminTLS(p.val, fp)
		default:
			return false
		}
		return true
	})
}

// checkAllowedHost checks a name of admin.allowed_hosts: a host name or IP
// address as a Host header carries it, without scheme, port or path.
func checkAllowedHost(h string) error {
	switch {
	case h == "":
		return errors.New("must not be empty")
	case strings.ContainsAny(h, "/:@ \t") && net.ParseIP(strings.Trim(h, "[]")) == nil:
		return fmt.Errorf("%q is not a host name: write the name alone, without scheme, port or path", clip(h))
	}
	return nil
}

// checkTraceURL checks admin.trace_url: an absolute http(s) URL in which
// {trace_id} stands for the run's trace id.
func checkTraceURL(u string) error {
	p, err := url.Parse(strings.ReplaceAll(u, "{trace_id}", "0"))
	switch {
	case err != nil || p.Scheme == "":
		return fmt.Errorf("%q is not an absolute URL: want e.g. https://tempo.example/trace/{trace_id}", clip(u))
	case p.Scheme != "http" && p.Scheme != "https":
		return fmt.Errorf("must be an http:// or https:// URL, got scheme %q", clip(p.Scheme))
	case p.Host == "":
		return fmt.Errorf("%q names no host: want e.g. https://tempo.example/trace/{trace_id}", clip(u))
	case !strings.Contains(u, "{trace_id}"):
		return fmt.Errorf("must contain {trace_id}, where the run's trace id goes (e.g. https://tempo.example/trace/{trace_id})")
	}
	return nil
}

// existingFile decodes a path to a file that must exist (a certificate, a key, a
// CA bundle) into dst.
func (d *decoder) existingFile(v *yaml.Node, fp string, dst *string) bool {
	var ok bool
	if *dst, ok = d.str(v, fp); !ok {
		return false
	}
	if *dst == "" {
		d.errorf(v, fp, "must not be empty (leave it out instead)")
		return false
	}
	if err := checkFile(*dst); err != nil {
		d.errorf(v, fp, "%v", err)
		return false
	}
	return true
}

// adminTLS decodes admin.tls: the listener's certificate and key, and the
// CAs whose client certificates it requires.
func (d *decoder) adminTLS(n *yaml.Node, path string) *AdminTLS {
	t := &AdminTLS{}
	has := d.subsection(n, path, adminTLSFields, func(p pair, fp string) bool {
		v := d.resolve(p.val)
		var dst *string
		switch p.name {
		case "cert_file":
			dst = &t.CertFile
		case "key_file":
			dst = &t.KeyFile
		case "client_ca_file":
			dst = &t.ClientCAFile
		}
		return d.existingFile(v, fp, dst)
	})
	if has == nil {
		return nil
	}
	for _, f := range []string{"cert_file", "key_file"} {
		if has[f] == absent {
			d.errorf(n, field(path, f), "is required: a TLS listener needs its certificate and key")
		}
	}
	return t
}
