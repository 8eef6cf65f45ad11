// Package config loads a Solocron job table: the YAML file every replica of a
// service reads, listing where runs are coordinated and which jobs run when.
// It is the only package of Solocron that knows YAML; what it hands back is
// plain Go (a File holding scheduler.Job values), and the jobs in it are
// checked by the same validator Go API users get, scheduler.ValidateTable.
//
//	f, err := config.Load("solocron.yaml")
//	if err != nil {
//		fmt.Fprintln(os.Stderr, err) // every problem, one per line
//		os.Exit(2)
//	}
//
// A program that embeds Solocron and runs Go functions as jobs passes them
// with WithFuncs; tests replace the environment with WithLookupEnv.
//
// JSONSchema returns the JSON Schema of the file (what `scheduler schema`
// prints and docs/solocron.schema.json holds), built from the same field
// lists the loader reads, for editors that complete and check a table as it
// is written.
//
// # The file
//
// One YAML document holding a mapping with these keys. Every key not listed
// here is an error, anywhere in the file.
//
//	replica_id: ""                  # optional
//	store: {...}                    # optional: where runs are coordinated
//	admin: {...}                    # optional: the admin HTTP server
//	defaults: {...}                 # optional: values every job inherits
//	jobs: [...]                     # required (may be empty)
//
// Top-level keys starting with "x-" are ignored; they are the place for YAML
// anchors that jobs merge in (x-common: &common {timeout: 10m} ... <<: *common).
//
// replica_id names this replica in run records, logs and metrics. Leave it
// out (or "") and the command line uses SOLOCRON_REPLICA_ID, --replica-id or
// <hostname>-<pid>; the flag and the variable win over the file.
//
// jobs is required. An empty list (jobs: [], or jobs: with every entry
// commented out) is valid: such a replica runs no jobs but serves the admin
// API and the command line still works. An empty file, or one without a jobs
// key, is an error, because it is far more often a wrong path or a half-
// rendered template than a deliberate choice.
//
// # store
//
//	store:
//	  url: redis://user:password@127.0.0.1:6379/0
//	  mode: standalone
//	  sentinel: {master: mymaster, addrs: ["127.0.0.1:26379"], username: "", password: ""}
//	  cluster: {addrs: ["127.0.0.1:7000"]}
//	  redlock: {urls: ["redis://a:6379", "redis://b:6379", "redis://c:6379"]}
//	  tls: {ca_file: ca.pem, cert_file: client.pem, key_file: client.key, server_name: "", insecure_skip_verify: false}
//	  key_prefix: solocron
//	  max_clock_skew: 2s
//	  min_replicas_ack: 0
//	  min_replicas_ack_timeout: 1s
//	  data_dir: /var/lib/solocron   # embedded store only
//
// The fields:
//
//   - url: redis:// or rediss:// (TLS), with optional user:password@ and
//     /db. Leave it out for the embedded in-process store, which suits one
//     replica only. In standalone mode the URL needs a host. In sentinel and
//     cluster mode it is optional and supplies the credentials, database and
//     TLS of the data nodes; the servers come from sentinel.addrs or
//     cluster.addrs. It is an error in redlock mode.
//   - mode: standalone (default), sentinel, cluster or redlock. The section
//     of the same name is required in sentinel (master and at least one
//     addr), cluster (at least one addr) and redlock mode (at least 3
//     distinct urls); a section for another mode is an error.
//   - data_dir: where the embedded store (no url) keeps its state, durably:
//     a start is on disk before the job starts, and a restart or kill -9
//     loses nothing decided. A relative path is relative to the table's
//     directory. Default: $STATE_DIRECTORY when set (systemd's
//     StateDirectory=), else "<table name>.data" beside the table
//     (solocron.yaml: solocron.data). One daemon per directory: a second
//     one refuses to start. An error with url (Redis keeps its own data).
//   - sentinel.username and sentinel.password authenticate to the sentinels.
//   - key_prefix starts every Redis key; default solocron. It must not be
//     empty or contain '{', '}' or whitespace, which would break the Redis
//     Cluster hash tag each job's keys share.
//   - max_clock_skew: the largest clock difference between replicas under
//     which each run still starts at most once; default 2s; must be > 0.
//   - tls: how connections use TLS. TLS is on for a rediss:// URL (in
//     redlock mode, per URL); in sentinel and cluster mode, whose servers
//     are addresses, a tls section alone also turns it on, for the
//     sentinels and the data nodes alike. ca_file (PEM; default: the
//     system's roots), cert_file and key_file (a client certificate, both or
//     neither), server_name (the name the servers' certificates carry;
//     default: the host dialled), insecure_skip_verify (tests only). The
//     files must exist when the table is loaded; relative paths are relative
//     to the working directory. A tls section with nothing that uses TLS (a
//     redis:// URL, the embedded store) is an error.
//   - min_replicas_ack: when above 0, a claim (and a lease renewal) counts
//     only once that many replicas of the primary acknowledged it (Redis
//     WAIT), within min_replicas_ack_timeout (default 1s); a claim too few
//     acknowledged is taken back and its run is not started. Standalone,
//     sentinel and cluster mode only (not the embedded store, not redlock).
//
// Credentials: user:password@ in a URL (Redis 6 ACL users, or a password
// alone for requirepass), sentinel.username and sentinel.password for the
// sentinels. Passwords never appear in errors, String or logs.
// Redlock mode coordinates mutexes only: a job with concurrency above 1, or
// with a pool, is an error there (the scheduler's own rule,
// scheduler.ValidateRedlockTable, reported at the job's line).
//
// # admin
//
//	admin:
//	  listen: 127.0.0.1:9090
//	  token: ${SOLOCRON_ADMIN_TOKEN}
//	  allowed_hosts: [solocron.internal]
//	  rate_limit: 20
//	  rate_burst: 40
//	  tls: {cert_file: admin.pem, key_file: admin.key, client_ca_file: clients-ca.pem}
//	  read_only: false
//	  trace_url: https://tempo.example/trace/{trace_id}
//
// listen is host:port with a numeric port (":9090" listens on every
// interface); leave it out to turn the server off. token, when set, is
// required as "Authorization: Bearer <token>" by every /api/v1 endpoint,
// reads included (/healthz, /readyz and /metrics stay open), and by the
// console (whose sign-in form exchanges it for a session); it must not
// contain whitespace. The token never appears in errors, in Admin.String or
// in logs.
//
// allowed_hosts lists host names (no scheme, port or path) that a request's
// Host header may carry besides the listen address and the loopback names;
// any other Host is answered 421. rate_limit (integer, default 20, 0 = no
// limit) is the requests per second each client IP may make to /api/v1 and
// the console;
// rate_burst (integer >= 1, default 40) how many it may make at once. tls
// serves the admin API over HTTPS: cert_file and key_file (PEM, both
// required, must exist) are the server's certificate and key; client_ca_file
// (PEM CAs, optional) requires every client to present a certificate signed
// by one of them.
//
// read_only (boolean, default false) refuses every action (trigger, pause,
// resume, backfill, cancel, retry) on the JSON API (403) and hides and
// refuses them on the console. trace_url,
// when set, links each traced run's page on the console to its trace: an
// http:// or https:// URL in which {trace_id} is replaced by the run's trace
// id.
//
// # jobs
//
// Each entry of jobs is a mapping. name and schedule are required, and
// exactly one of command, http or func (or the one defaults names):
//
//	field              type                 default   meaning
//	name               string               -         [A-Za-z0-9_.-]{1,128}, unique in the file
//	schedule           string               -         cron spec (5 fields, or 6 with seconds first),
//	                                                  @hourly/@daily/..., or "@every <duration>"
//	timezone           string               UTC       IANA zone the cron spec is evaluated in
//	offset             duration             0         shifts "@every" instants off the epoch grid
//	command            list of strings      -         argv, run without a shell
//	http               mapping              -         a request (below)
//	func               string               -         a Go function registered with WithFuncs
//	dir                string               ""        command jobs: working directory
//	env                mapping of strings   {}        command jobs: added to the few variables
//	                                                  inherited (PATH, HOME, LANG, TZ, LC_*, ...)
//	kill_grace         duration             10s       command jobs: SIGTERM to SIGKILL; at most
//	                                                  lease/2; default 10s or lease/3, the shorter
//	log_output         debug|info           debug     command jobs: log level of output lines
//	concurrency        integer              1         runs in flight at once, across replicas
//	overlap            skip|wait|replace    skip      what a run does when every slot is busy
//	max_wait           duration             starting_deadline   overlap: wait only
//	lease              duration             30s       claim lifetime; renewed every lease/3
//	timeout            duration             0 (none)  cancels a run that lasts longer; http
//	                                                  jobs: 1m (jobs.DefaultHTTPTimeout)
//	retries            integer              0         extra attempts inside the same run
//	retry_backoff      duration             1s        first retry delay; doubles, with jitter
//	jitter             duration             0         deterministic per-run start delay; at
//	                                                  most the schedule's shortest interval
//	starting_deadline  duration             10s       a run not started by then is missed
//	catchup_window     duration             0 (off)   after a full outage, run missed instants
//	catchup            latest|all           latest    which missed instants run
//	on_lease_lost      cancel|continue      cancel    what a lost lease does to a running job
//	paused             boolean              false     keeps the job from starting
//	history_limit      integer              100       run records kept (at most 10000)
//	pause_after_failures integer            0 (off)   pause after N runs in a row end badly
//	blackouts          list of windows      none      instants inside are skipped_blackout:
//	                                                  {cron, duration, timezone} or {from, to}
//
// A field left out means its default: the File holds zero for it, and the
// scheduler applies the default. What the values may be (a valid zone, a
// positive lease, max_wait only with overlap: wait, ...) is decided by
// scheduler.ValidateTable (and, for command and http, by the handler's own
// jobs.Command.Validate or jobs.HTTP.Validate through it), which name Go
// fields; each problem is reported here at the YAML field's position, once
// at the defaults: line for a value the jobs inherit.
//
// command is a non-empty list whose first entry is the program, e.g.
// ["./draw", "--winners", "10"]; numbers in it keep the text written. For a
// shell, write ["sh", "-c", "..."]. env must not set the variables the
// scheduler sets for every run (SOLOCRON_JOB, SOLOCRON_RUN_ID,
// SOLOCRON_SCHEDULED_AT, SOLOCRON_FENCING_TOKEN, SOLOCRON_ATTEMPT,
// SOLOCRON_REPLICA_ID, SOLOCRON_SLOT) nor those that mark the job
// supervisor (SOLOCRON_JOB_SUPERVISOR, SOLOCRON_JOB_SUPERVISOR_GORACE):
// jobs.ReservedEnv. env, dir,
// kill_grace and log_output in a job that is not a command job are errors.
// A command job inherits nothing else of the scheduler's environment (see
// jobs.Inherited): a secret it needs is named in env.
//
// http is a mapping:
//
//	http:
//	  method: POST                  # default GET; case-sensitive
//	  url: https://example.com/x    # required: absolute http or https URL
//	  headers: {Authorization: "Bearer ${TOKEN}"}
//	  body: '{"full": true}'        # default none
//	  expect_status: [200, 204]     # default any 2xx
//	  follow_redirects: same_host   # same_host (default) | all | none
//
// follow_redirects same_host follows a redirect only to the URL's own host,
// never from https to http; all follows any (up to 10); none follows none.
// A refused redirect fails the run with the redirect named in its error. An
// http job without a timeout gets 1m.
//
// Header names are case-insensitive (and stored canonicalised, e.g.
// Content-Type); values must not contain line breaks. Idempotency-Key,
// Solocron-Fencing-Token and Solocron-Fencing-Slot are set by the scheduler
// and cannot be given (jobs.ReservedHeader).
//
// func names a function registered with WithFuncs. Func jobs run only in a
// program that embeds Solocron: the stand-alone daemon has none, so for it
// every func job is an error.
//
// # defaults
//
// defaults takes any job field except name and schedule. A job's own value
// wins. env and http.headers merge key by key, the job's keys winning; the
// other http fields merge field by field; every other field, command
// included, is replaced whole. Defaults for command, http and func apply
// to the jobs of that kind, so a default http: {headers: ...} serves every
// http job; and if defaults names exactly one of them, a job that names none
// of its own is of that kind (if it names several, such a job is an error).
// A default env, dir or kill_grace simply does not apply to jobs that are
// not command jobs.
// A problem with a default value is reported once, at the defaults key,
// naming the jobs that inherit it.
//
// # Values
//
// Strings accept any scalar: numbers and booleans keep the text written, so
// env: {PORT: 8080} works. null is not a value for a field; but a mapping
// or list whose entries are all commented out (store:, admin:, defaults:,
// jobs:, env:, headers:, sentinel: ...) counts as empty.
//
// Integers are YAML integers (2, not "2"); booleans are true or false
// (YAML 1.2: yes, no, on and off are strings, and errors here).
//
// Durations are Go duration strings: 300ms, 30s, 1h30m. The plain number 0
// is accepted too; any other bare number is an error (write 30s, not 30).
// Negative durations are errors.
//
// YAML anchors, aliases and "<<" merge keys work as in YAML, but a document
// whose aliases expand to far more nodes than it holds is refused. The file
// must be UTF-8 and at most 16 MiB (MaxFileSize), and hold exactly one YAML
// document (a trailing empty "---" is tolerated).
//
// # Environment variables
//
// ${VAR} in any string value is replaced by the variable from the
// scheduler's environment when the file is loaded, which keeps secrets out
// of the file. The braces are required:
//
//	${VAR}      the value of VAR; VAR unset is an error (set but empty is fine)
//	$$          a literal $ (so $${VAR} is the text ${VAR})
//	$VAR        left as written, so a shell inside a command job expands it
//	            when the job runs
//	${          without a closing }, or a name that is not [A-Za-z_][A-Za-z0-9_]*,
//	            is an error; ${VAR:-default} and similar forms are not supported
//
// Expansion applies to values only, never to keys, and happens after YAML
// parsing, so quoting and escapes are YAML's and error positions are those of
// the value as written. A field that is not a string may be written as a
// string holding ${VAR} (retries: "${RETRIES}"); the expanded text is then
// read as the field's type.
//
// # Errors
//
// Load and Parse report every problem at once, sorted by position, as a
// *Errors whose entries (*Error) print as
//
//	FILE:LINE:COL: field.path: message
//
// for example
//
//	solocron.yaml:2:3: defaults.timezone: unknown time zone "Mars/Olympus"; ... (inherited by jobs[0] "a", jobs[1] "b")
//	solocron.yaml:14:5: jobs[2].schedule: "0 0 * *": expected 5 or 6 fields, found 4
//	solocron.yaml:17:12: jobs[2].http.url: scheme "ftp" is not http or https
//	solocron.yaml:20:5: jobs[3].comand: unknown field "comand" (did you mean "command"?)
//	solocron.yaml:23:14: jobs[3].timeout: expected a duration such as 30s or 1h30m, got integer 30 (...)
//
// Paths look like jobs[2].http.url, jobs[0].env.FOO, store.sentinel.master
// or defaults.timezone; keys that are not plain words are quoted
// (jobs[0].http.headers["X Y"]). A problem with a value is reported at the
// value; an unknown or duplicate key at the key; a problem the scheduler's
// validator finds at the key of the field concerned, or at the job itself
// (with path jobs[i].<field>) when the field is left out. Problems with the
// file as a whole (YAML syntax, several documents, aliases) have the path
// yaml; YAML syntax errors carry a line but no column, so their column is 1.
//
// A File is returned only when there is no problem at all, so a replica
// reloading a bad file keeps running its old table. Parse never panics.
package config
