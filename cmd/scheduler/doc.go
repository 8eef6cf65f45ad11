// Command scheduler is the Solocron daemon and its command line: it runs
// cron jobs for a service that runs as many replicas, so that each
// scheduled run is started by exactly one replica.
//
// Every replica loads the same YAML job table (see config.example.yaml and
// the config package for every field). At each scheduled instant the
// replicas race for the run in Redis; one wins, runs the job and keeps its
// lease alive while it runs; the others record nothing and move on.
//
//	scheduler validate --config solocron.yaml
//	scheduler run      --config solocron.yaml --replica-id web-1 --admin-listen 127.0.0.1:9090
//	scheduler status   --config solocron.yaml
//
// # Commands
//
//	scheduler <command> [flags] [args]
//
// Flags may come before or after the arguments ("history lottery --limit 5");
// --config, --log-format and --log-level also before the command
// ("scheduler --config t.yaml status").
// Every command takes (schema and version read no table: they ignore --config):
//
//	--config FILE        the job table; default ./solocron.yaml
//	--log-format FORMAT  text (default) or json; logs go to stderr
//	--log-level LEVEL    debug, info (default), warn or error
//
// run runs a replica until SIGINT or SIGTERM:
//
//	--replica-id ID          names the replica in run records, logs, metrics and spans
//	--admin-listen ADDR      serves the admin API on host:port, overriding admin.listen;
//	                         --admin-listen= (empty) turns it off
//	--shutdown-grace D       on SIGINT/SIGTERM, how long runs in flight may go on
//	                         before they are cancelled; default 30s, 0 cancels at once
//
// The replica id is the first of: --replica-id, the environment variable
// SOLOCRON_REPLICA_ID, the file's replica_id, and <hostname>-<pid>. The flags
// let several replicas share one file on one host.
//
// On SIGINT or SIGTERM, run stops claiming, lets runs in flight finish for
// the grace period, cancels the rest (their commands get SIGTERM, then SIGKILL
// after kill_grace; their records say interrupted), closes every record,
// flushes telemetry and exits 0. A scheduled run whose claim was answered
// during the shutdown still starts within the grace period; manual runs this
// replica claimed but has not started (queued for a slot, or just won) go
// back to the cluster's pending requests, and another replica runs them.
// /readyz answers 503 from the signal on.
//
// On SIGHUP, run reads the file again. A good file puts its jobs in force at
// once (runs in flight finish under the old definition); a bad one is
// logged, every problem as its own record, and changes nothing. The store,
// admin and replica_id sections are read at start only: a reload that
// changes them logs a warning naming them, and they take effect at the next
// restart.
//
// run refuses to start (exit 2) when the admin API would listen on an
// address other than loopback (127.0.0.0/8, ::1 or "localhost"; ":9090" and
// host names count as exposed) without admin.token or client certificates
// (admin.tls.client_ca_file). When Redis is reachable
// at start, run checks its maxmemory-policy and warns unless it is
// noeviction: every key Solocron keeps has a TTL, so the volatile-*
// policies can evict them as well as allkeys-*, and an evicted run record
// lets a run start twice. If CONFIG GET is disabled it says it could not
// check.
//
// Without store.url the store is embedded in the run process: a real
// single-node scheduler whose state lives in a data directory
// (store.data_dir; default $STATE_DIRECTORY, else "<table name>.data"
// beside the table), every start on disk (fsynced) before the job starts, so
// that a restart or kill -9 loses nothing decided. The directory is locked:
// a second run on it exits 1. It listens on no port; status, history,
// trigger, pause, resume, backfill and replicas reach it through the
// daemon's admin API, at the table's admin.listen with its admin.token (or
// --admin URL, which also works for a daemon on Redis). Wrong for several
// replicas, which would not see each other: give them a Redis (store.url).
//
// validate checks the file and prints each problem on stderr as
//
//	FILE:LINE:COL: path: message
//	solocron.yaml:14:5: jobs[2].schedule: "0 0 * *": expected 5 or 6 fields, found 4
//	solocron.yaml:20:5: jobs[3].comand: unknown field "comand" (did you mean "command"?)
//
// and exits 2; or prints "FILE: ok (N jobs)" and exits 0. It also warns
// (exit 0) when run would refuse the file's admin section.
//
// next [--count N] [--from TIME] [JOB] prints the next N (default 5) scheduled
// instants of each job, or of JOB, in UTC and in the job's time zone, after
// now or after the RFC 3339 time given:
//
//	$ scheduler next --count 2 lottery
//	JOB      SCHEDULE      UTC                   JOB'S ZONE
//	lottery  0 0 12 * * *  2026-11-22T04:00:00Z  Sun 2026-11-22 12:00:00 CST (Asia/Shanghai)
//	lottery  0 0 12 * * *  2026-11-23T04:00:00Z  Mon 2026-11-23 12:00:00 CST (Asia/Shanghai)
//
// An instant inside one of the job's blackout windows is listed with
// "[blackout <window>: recorded skipped_blackout]" after it: it will not run.
//
// status [--json] [--limit N] [JOB] shows each job of the table, or JOB, as
// the cluster sees it: paused (cluster-wide, or in the table), runs in flight
// on any replica (replica, since, slot, fencing token), runs waiting for a slot,
// manual runs not yet claimed, and the last N (default 5) finished runs with
// outcome and duration. --json prints one object for JOB and an array
// otherwise, each with the fields of scheduler.Status plus paused_in_table.
//
//	$ scheduler status
//	JOB        PAUSED  RUNNING  WAITING  LAST RUN                        OUTCOME    REPLICA  FINISHED              DURATION
//	heartbeat  no      0        0        heartbeat@2026-11-22T08:50:10Z  succeeded  web-1    2026-11-22T08:50:10Z  19ms
//	lottery    yes     0        0        -                               -          -        -                     -
//
// history [--json] [--limit N] JOB prints JOB's run records, newest first (at
// most N, default 20; the store keeps the job's history_limit): run id, kind
// (scheduled, manual, catchup, backfill), outcome, replica, start, duration, attempts,
// fencing token and error. --json prints them as an array of scheduler.Run.
//
// trigger [--wait D] JOB asks the cluster to run JOB now, once; JOB must be
// in the table (exit 2 otherwise). It prints the run id
// (JOB@manual-<suffix>). Within a heartbeat (1s) one replica that has JOB in
// its table claims it; manual runs ignore the pause flag but respect the
// job's concurrency and overlap policy. With --wait D (default 10s; 0 returns
// at once) it then waits up to D for the run to end and prints who ran it;
// it exits 0 only if the run succeeded, 1 if it failed, timed out, was not
// started (skipped, missed) or had not ended within D (the run goes on).
// A job has at most 100 manual runs waiting to be picked up: beyond that,
// trigger fails (exit 1) and says so (the admin API answers 429):
//
//	$ scheduler trigger lottery
//	lottery@manual-towb7m8afb000f16dc
//	lottery@manual-towb7m8afb000f16dc: succeeded on web-2 in 1.204s (fencing token 1795337410001550, 1 attempt)
//
// backfill JOB --from T --to T [--parallel N] [--detach] runs every instant
// of JOB's schedule in [T, T] once (RFC 3339, or a date for midnight UTC;
// past instants only; at most 100000), under the instants' own run ids,
// recorded with kind backfill: an instant whose record is still kept (it
// ran, or was skipped) is not run again. Replicas that have JOB take the
// instants oldest first, within its concurrency and at most N (1..100,
// default 1) at a time across the cluster; blackout instants are recorded
// skipped_blackout; a paused job's backfill waits. On a terminal it draws a
// progress bar (decided/total, rate, ETA), otherwise prints a line every
// 5s; Ctrl-C cancels (what started finishes, the rest is dropped) and it
// reports what ran, was skipped and was dropped. Exit 0 when every instant
// ran and succeeded or had run before, 1 otherwise or when the job has a
// backfill going on already, 2 for a bad range. backfill JOB --cancel
// cancels the job's backfill; status JOB shows its progress. Redlock
// stores cannot backfill.
//
// If no replica claimed it in time (none is running, or none has JOB) it
// says the run is still queued, with a note, and exits 0: the request stays
// in the store until a replica claims it. A run still going when D ends is
// reported as running, with its replica.
//
// pause JOB and resume JOB set the cluster-wide pause flag, which every
// replica honours from its next claim: paused runs are recorded
// skipped_paused; runs in flight go on. A job with paused: true in the
// table stays paused on the replicas that load that table whatever the flag
// says. A job with pause_after_failures: N is paused by the cluster itself
// after N runs in a row end failed, timed_out or lease_lost; status JOB
// says why, and resume JOB also clears that count.
//
// replicas lists the live replicas as they registered in the store (each
// writes a record once per heartbeat; one that stops beating drops out after
// five heartbeats, at least 10s): id, version, start, last heartbeat, clock
// offset to Redis, a fingerprint of its job table, jobs, runs in flight. A
// replica whose table differs from most (a rolling deploy half done, a stale
// config) is marked "(differs)"; the fingerprint of the given file is
// printed too, to compare with. --json prints {"file_table", "replicas"}.
//
//	$ scheduler replicas
//	REPLICA  VERSION  STARTED               HEARTBEAT  CLOCK OFFSET  TABLE         JOBS  RUNNING
//	web-1    v1.4.0   2026-11-22 08:40:02Z  312ms ago  1ms           a6c23fb2c71f  3     1
//	web-2    v1.3.9   2026-11-21 17:02:40Z  870ms ago  -2ms          90d1e2c4b7a0 (differs)  3  0
//
// schema prints the JSON Schema (draft 2020-12) of the job table, the one
// docs/solocron.schema.json holds, for editors; it needs no table.
//
// version (also --version and -v) prints the version, the commit and the
// build date, stamped at build time with -ldflags "-X main.version=v1.2.3
// -X main.commit=... -X main.date=..." as the release builds and the
// Dockerfile do (otherwise the module version, VCS revision and commit time
// Go recorded, or "unknown"), then the Go version and platform and the
// module and its checksum when known.
//
// help, -h and --help print the usage; "help COMMAND" and "COMMAND -h" print
// a command's flags.
//
// # Exit codes
//
//	0  success (for run: a clean shutdown after SIGINT/SIGTERM)
//	1  runtime failure: the store or admin API cannot be reached, the admin
//	   port cannot be bound, the data directory is locked by another daemon;
//	   trigger: the run did not succeed (or had not ended within --wait)
//	2  usage or configuration error: bad flags, unknown command or job, a
//	   table with problems, a store the build cannot use, an exposed admin API
//	   without a token
//
// # Admin HTTP API
//
// Off unless admin.listen or --admin-listen is set. With admin.token set,
// every /api/v1 endpoint, reads included, needs
// "Authorization: Bearer <admin.token>" (401 without one, 403 with a wrong
// one); /healthz, /readyz and /metrics stay open (probes and scrapers carry
// no token; they show no run output). The POST endpoints also refuse
// cross-origin browser requests (403) in any case, so that a web page cannot
// drive a loopback admin port. Every request, GETs and probes included, must
// carry a Host the server answers to: the listen address's host (any IP
// address when it listens on every interface), a loopback name (localhost,
// *.localhost, 127.0.0.0/8, ::1) or a name in admin.allowed_hosts; any other
// Host gets 421, which defeats DNS rebinding (a page that points its own
// name at 127.0.0.1 still sends its own name). Each client (remote IP) may
// make admin.rate_limit requests per second to /api/v1 and the console
// (default 20, bursts of admin.rate_burst, default 40; 0 turns it off); more
// get 429 with Retry-After. admin.tls {cert_file, key_file} serves HTTPS, and
// client_ca_file requires client certificates signed by those CAs (mutual
// TLS). The API reads Redis through a client of its own (a pool of 4
// connections named solocron-admin), never the one that claims and renews.
// Keep the port on loopback or a private network. Answers never show the
// store URL, the token, or a job's command line, environment, URL or headers
// (any of which may hold a ${VAR} secret); run records carry the tail of a
// job's output, with the scheduler's secrets masked. See docs/security.md.
//
//	GET  /healthz                          200 {"status":"ok"} while the process serves
//	GET  /readyz                           200 {"status":"ready"} when the table is loaded and Redis
//	                                       answered the last heartbeat recently; 503
//	                                       {"status":"not ready","error":"..."} otherwise, and
//	                                       during shutdown
//	GET  /metrics                          Prometheus text format
//	GET  /api/v1/jobs[?limit=N&cursor=C]   the table in force, with cluster state, in name
//	                                       order, N jobs a page (default 100, at most 500);
//	                                       "next_cursor" in the answer names the next page
//	GET  /api/v1/jobs/{name}[?limit=N]     one job and its status (N recent runs, default 10)
//	GET  /api/v1/jobs/{name}/runs[?limit=N] its run records, newest first (default 20, at most 1000)
//	POST /api/v1/jobs/{name}/trigger       202 {"job":"lottery","run_id":"lottery@manual-..."}; 429 when 100 are pending
//	POST /api/v1/jobs/{name}/pause         200 {"job":"lottery","paused":true}
//	POST /api/v1/jobs/{name}/resume        200 {"job":"lottery","paused":false}
//	POST /api/v1/jobs/{name}/backfill      body {"from":"2026-11-01T00:00:00Z","to":"...","parallel":2}:
//	                                       202 the backfill's state; 400 bad range, 409 one
//	                                       goes on already
//	GET  /api/v1/jobs/{name}/backfill      200 {"total","decided","started","already","skipped",
//	                                       "in_flight","cancelled","finished",...}; 404 none
//	DELETE /api/v1/jobs/{name}/backfill    200 cancelled (runs in flight go on); 404 none goes on
//	GET  /api/v1/replicas                  {"replica":"web-1","replicas":[{"id":"web-1","version":...,
//	                                       "table":"a6c23fb2c71f","table_differs":false,...}],
//	                                       "tables_differ":false}
//
// admin.read_only: true refuses every action (403): trigger, pause, resume,
// backfill, cancel and retry.
//
// Every other path is the operator console (docs/console.md): / lists the
// jobs, /jobs/{name} shows a job's timeline and history, /runs/{id} a run,
// /replicas the replicas. With admin.token set it shows a sign-in form; the
// token buys an HttpOnly, SameSite=Strict session cookie for 12 hours, which
// also opens the /api/v1 reads to that browser. The console is under the
// same Host check, rate limit and redaction as the API, and reads through
// the solocron-admin client. admin.trace_url (a URL with {trace_id}, e.g.
// https://tempo.example/trace/{trace_id}) links a traced run's page to its
// trace.
//
// Errors are JSON, {"error":"..."}: 400 for a bad limit, 401 and 403 as
// above, 404 for a job not in this replica's table or an unknown path, 405
// for a wrong method (with Allow), 421 for an unknown Host, 429 over the
// rate limit, 503 when the store does not answer.
//
//	$ curl -s -H "Authorization: Bearer $SOLOCRON_ADMIN_TOKEN" 127.0.0.1:9090/api/v1/jobs
//	{"replica":"web-1","jobs":[{"name":"heartbeat","kind":"command","schedule":"@every 5s",
//	 "timezone":"UTC","next":"2026-11-22T08:50:15Z","concurrency":1,"overlap":"skip","lease":"30s",
//	 "timeout":"4s","retries":0,"starting_deadline":"10s","history_limit":100,
//	 "paused_in_table":false,"paused":false,"running":0,
//	 "last_run":{"id":"heartbeat@2026-11-22T08:50:10Z","job":"heartbeat","kind":"scheduled",
//	   "scheduled_at":"2026-11-22T08:50:10Z","decision":"started","outcome":"succeeded",
//	   "replica":"web-1","fencing_token":1795337410001550,"started_at":"2026-11-22T08:50:10.001Z",
//	   "finished_at":"2026-11-22T08:50:10.02Z","attempts":1,"output":"heartbeat ...\n"}}, ...]}
//
//	$ curl -s 127.0.0.1:9090/api/v1/jobs/heartbeat?limit=1
//	{"job":{"name":"heartbeat","kind":"command",...},
//	 "status":{"job":"heartbeat","paused":false,"running":[],"waiting":0,
//	   "last_scheduled":"2026-11-22T08:50:10Z","pending_manual":0,"history":[{...}]}}
//
//	$ curl -s -X POST -H "Authorization: Bearer $SOLOCRON_ADMIN_TOKEN" 127.0.0.1:9090/api/v1/jobs/lottery/pause
//	{"job":"lottery","paused":true}
//
// "paused" is the cluster-wide flag, "paused_in_table" the table's paused
// field; "next" is the next scheduled instant in UTC (before jitter).
//
// # Metrics
//
// /metrics serves the OpenTelemetry instruments of the scheduler through the
// OpenTelemetry Prometheus exporter, on a registry of its own, with the Go
// runtime and process collectors and a target_info series carrying the
// resource (service_name, service_instance_id = the replica id, ...).
// Attributes are low-cardinality: job names and small closed sets, never run
// ids.
//
//	solocron_runs_total{job,outcome}              runs decided (started, skipped_overlap,
//	                                              skipped_paused, skipped_blackout, missed) or ended (succeeded,
//	                                              failed, timed_out, lease_lost, interrupted,
//	                                              replaced) by this replica
//	solocron_claims_total{job,result}             claim attempts: won, taken (another replica
//	                                              had it), waiting, decided, refused, early, error
//	solocron_run_duration_seconds{job,outcome}    histogram of run durations
//	solocron_claim_duration_seconds               histogram of claim round trips to Redis
//	solocron_dispatch_delay_seconds{job}          histogram: scheduled instant (plus jitter) to start
//	solocron_lease_renewals_total{result}         lease renewals: ok, error, lost, replaced
//	solocron_lease_lost_total{job}                leases lost while a run was in flight
//	solocron_running{job}                         runs in flight on this replica
//
// Every series also carries otel_scope_name="github.com/solocron/solocron/scheduler".
// Without the admin API, metrics are not collected at all.
//
// # Traces
//
// Each run is a span "solocron.run" (attributes solocron.job, solocron.run_id,
// solocron.scheduled_at, solocron.kind, solocron.fencing_token,
// solocron.replica, solocron.outcome, solocron.attempts) with its claim as a
// child span "solocron.claim". They are exported with OTLP over HTTP
// (protobuf) when OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set, unless OTEL_SDK_DISABLED=true or
// OTEL_TRACES_EXPORTER=none; otherwise no tracing SDK is set up at all.
// The standard variables configure the rest (OTEL_EXPORTER_OTLP_HEADERS,
// OTEL_EXPORTER_OTLP_TIMEOUT, OTEL_TRACES_SAMPLER, OTEL_BSP_*, ...). Spans
// still buffered are flushed at shutdown, for at most 5 seconds.
//
// With spans exported, each job continues its run's trace: HTTP jobs send
// traceparent and tracestate, command jobs get TRACEPARENT and TRACESTATE,
// and the run record keeps the trace id (when the run was sampled).
// OTEL_PROPAGATORS chooses the format: tracecontext,baggage by default;
// none sends nothing.
//
// The resource says service.name=solocron and service.instance.id=<replica
// id>, service.version=<version>; OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES override them.
//
// # Environment
//
//	SOLOCRON_REPLICA_ID           the replica id, under --replica-id and over the file's replica_id
//	${VAR} in the table           any variable, expanded when the file is (re)loaded
//	OTEL_EXPORTER_OTLP_ENDPOINT,
//	OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
//	                              turn span export on (OTLP/HTTP)
//	OTEL_SDK_DISABLED=true,
//	OTEL_TRACES_EXPORTER=none     turn it off again
//	OTEL_SERVICE_NAME,
//	OTEL_RESOURCE_ATTRIBUTES      override the resource
//	OTEL_PROPAGATORS              how a run's trace context reaches its job (tracecontext,baggage)
//
// Command jobs do not inherit the scheduler's environment, which holds its
// own secrets. Their environment is built: PATH, HOME, USER, LOGNAME, SHELL,
// TMPDIR, TZ, LANG, LANGUAGE and LC_* from the scheduler's (when set), then
// the job's env (a secret the job needs is named there, e.g.
// env: {API_KEY: "${API_KEY}"}), then SOLOCRON_JOB, SOLOCRON_RUN_ID,
// SOLOCRON_SCHEDULED_AT, SOLOCRON_FENCING_TOKEN, SOLOCRON_ATTEMPT,
// SOLOCRON_REPLICA_ID and SOLOCRON_SLOT. They run in a process group of their own that dies
// with the replica (see package jobs). Their output lines are logged at
// DEBUG, unless the job says log_output: info; the run record keeps the
// last 4 KiB either way.
//
// HTTP jobs follow redirects only to the same host, never from https to
// http, unless the job says http.follow_redirects: all (or none: no
// redirect at all); a refused redirect fails the run (the record's error
// says "redirect refused" and where to). A job without a timeout gets 1m:
// a server that never answers cannot hold the slot forever. At most 4 KiB
// of the answer are kept and 64 KiB more read.
//
// # Secrets
//
// The scheduler's own secrets are the admin token, the store's passwords
// (in store.url, store.sentinel.password, store.redlock.urls) and the
// contents of its TLS key files (store.tls.key_file, admin.tls.key_file).
// Whatever variable they came from, they never reach a job's environment
// unless its env names them, and they are masked as [REDACTED] in every log
// line, CLI output, API answer, error, run record, trace and metric, even
// when a job prints them. Secrets shorter than 4 characters cannot be masked
// (run warns). Passwords in store URLs are logged as "xxxxx"; reload
// warnings name changed sections, not values. Put secrets in the
// environment and reference them as ${VAR}. See docs/security.md.
package main
