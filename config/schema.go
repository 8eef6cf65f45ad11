package config

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/solocron/solocron/notify"
	"github.com/solocron/solocron/scheduler"
)

// SchemaID is the $id of the JSON Schema of the job table.
const SchemaID = "https://github.com/solocron/solocron/docs/solocron.schema.json"

// JSONSchema returns the JSON Schema (draft 2020-12) of the job table,
// indented, ending in a newline: what `scheduler schema` prints and
// docs/solocron.schema.json holds. Editors use it to complete and check a
// table as it is written (config.example.yaml names it in its first line,
// for the YAML language server).
//
// It is built from the loader's own lists of the fields of each section,
// so a field the loader reads is a property of the schema; each field's
// type and description are in schemaFields. The schema checks the shape of
// the file (field names, types, enumerations, durations); the loader also
// checks what a schema cannot say (a schedule that parses, a time zone that
// exists, unique names) and has the last word.
func JSONSchema() []byte {
	defs := map[string]any{
		"text": map[string]any{
			"description": "A string. Numbers and booleans are read as the text written. ${VAR} is replaced from the scheduler's environment when the file is loaded; $$ is a literal $.",
			"type":        []string{"string", "number", "boolean"},
		},
		"variable": map[string]any{
			"description": "A ${VAR} reference, replaced from the scheduler's environment when the file is loaded and then read as the field's type.",
			"type":        "string",
			"pattern":     `\$\{[^}]+\}`,
		},
		"duration": map[string]any{
			"description": "A Go duration: 300ms, 30s, 1h30m; a bare 0 is fine too. Never negative.",
			"anyOf": []any{
				map[string]any{"type": "string", "pattern": `^\+?(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$`},
				map[string]any{"type": "number", "const": 0},
				ref("variable"),
			},
		},
		"hostport": map[string]any{
			"description": "host:port",
			"type":        "string",
			"pattern":     `^.+:[0-9]{1,5}$|\$\{`,
		},
		"store":        section("store", storeFields),
		"tls":          section("tls", tlsFields),
		"sentinel":     section("sentinel", sentinelFields),
		"cluster":      section("cluster", clusterFields),
		"redlock":      section("redlock", redlockFields),
		"admin":        section("admin", adminFields),
		"admin_tls":    section("admin_tls", adminTLSFields),
		"http":         section("http", httpFields),
		"notification": section("notification", notificationFields),
		"blackout":     section("blackout", blackoutFields),
		"job":          section("job", jobFields),
		"defaults":     section("job", slices.DeleteFunc(slices.Clone(jobFields), func(f string) bool { return slices.Contains(noDefault, f) })),
	}
	store := defs["store"].(map[string]any)
	// The mode decides which section the store needs.
	var modeRules []any
	for _, m := range []string{"sentinel", "cluster", "redlock"} {
		modeRules = append(modeRules, map[string]any{
			"if":   map[string]any{"properties": map[string]any{"mode": map[string]any{"const": m}}, "required": []string{"mode"}},
			"then": map[string]any{"required": []string{m}},
		})
	}
	store["allOf"] = modeRules

	defs["notification"].(map[string]any)["required"] = []string{"name", "url", "on"}
	defs["notification"].(map[string]any)["description"] = "One receiver of notifications: a POST per event, signed when it has a secret."

	job := defs["job"].(map[string]any)
	job["required"] = []string{"name", "schedule"}
	// One of command, http or func, or none (then the one defaults: names).
	job["not"] = map[string]any{"anyOf": []any{
		map[string]any{"required": []string{"command", "http"}},
		map[string]any{"required": []string{"command", "func"}},
		map[string]any{"required": []string{"http", "func"}},
	}}
	job["description"] = "One job: a name, a schedule and one of command, http or func (or the one defaults: names)."
	defs["defaults"].(map[string]any)["description"] = "Any job field except name and schedule; a job's own value wins (env and http.headers merge key by key). Checked even where no job inherits it: a `defaults.timezone` that is no zone is an error."

	s := section("top", topFields)
	s["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	s["$id"] = SchemaID
	s["title"] = "Solocron job table"
	s["description"] = "The job table every replica of a service loads. Unknown fields are errors; durations are Go durations; ${VAR} expands from the environment."
	s["required"] = []string{"jobs"}
	// x-* keys hold YAML anchors for use elsewhere in the file.
	s["patternProperties"] = map[string]any{"^x-": map[string]any{"description": "Ignored: a place for YAML anchors (&name) used elsewhere in the file."}}
	s["$defs"] = defs
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // "<hostname>" reads better than "\u003chostname\u003e"
	enc.SetIndent("", "  ")
	if err := enc.Encode(s); err != nil {
		panic("config: the schema does not marshal: " + err.Error()) // static data: a bug here, not input
	}
	return b.Bytes()
}

// section is the schema of one mapping of the table: the fields the loader
// lists for it, each described by schemaFields[name]. A field without an
// entry there still appears (so the schema never refuses what the loader
// takes), with no type and no description; a test fails on it.
func section(name string, fields []string) map[string]any {
	props := make(map[string]any, len(fields))
	docs := schemaFields[name]
	for _, f := range fields {
		p := map[string]any{}
		if d, ok := docs[f]; ok {
			for k, v := range d.schema {
				p[k] = v
			}
			p["description"] = d.desc
			if d.def != nil {
				p["default"] = d.def
			}
		}
		props[f] = p
	}
	return map[string]any{
		"type":                 []string{"object", "null"},
		"properties":           props,
		"additionalProperties": false,
	}
}

// fieldDoc is what the schema says about one field besides its name.
type fieldDoc struct {
	desc   string
	schema map[string]any // type, enum, items...
	def    any            // the default, when there is one worth showing
}

func ref(def string) map[string]any { return map[string]any{"$ref": "#/$defs/" + def} }

var (
	text     = ref("text")
	duration = ref("duration")
)

func orVariable(s map[string]any) map[string]any {
	return map[string]any{"anyOf": []any{s, ref("variable")}}
}

func integer(least int) map[string]any {
	return orVariable(map[string]any{"type": "integer", "minimum": least})
}

// integerIn is an integer in [least, most].
func integerIn(least, most int) map[string]any {
	return orVariable(map[string]any{"type": "integer", "minimum": least, "maximum": most})
}

func boolean() map[string]any { return orVariable(map[string]any{"type": "boolean"}) }

func enum[T ~string](values ...T) map[string]any {
	return orVariable(map[string]any{"enum": values})
}

func list(item map[string]any, minItems int) map[string]any {
	s := map[string]any{"type": "array", "items": item}
	if minItems > 0 {
		s["minItems"] = minItems
	}
	return s
}

func strMap() map[string]any {
	return map[string]any{"type": []string{"object", "null"}, "additionalProperties": text}
}

// schemaFields describes every field of every section, keyed by the
// section (as passed to section) and the field's name in the loader's list.
var schemaFields = map[string]map[string]fieldDoc{
	"top": {
		"replica_id":    {desc: "Names this replica in run records, logs and metrics: 1 to 256 bytes, no control characters. Default <hostname>-<pid>; the environment variable SOLOCRON_REPLICA_ID and the flag --replica-id win over it.", schema: text},
		"store":         {desc: "Where the replicas race for runs. Without url the store is embedded in the process: one replica only.", schema: ref("store")},
		"admin":         {desc: "The admin HTTP server: /healthz, /readyz, /metrics, the console and the JSON API. Off when listen is unset.", schema: ref("admin")},
		"defaults":      {desc: "Any job field except name and schedule; a job's own value wins (env and http.headers merge key by key). Checked even where no job inherits it: a `defaults.timezone` that is no zone is an error.", schema: ref("defaults")},
		"notifications": {desc: "Webhook targets jobs name in notify:. One POST per event across the cluster (Solocron-Delivery: <run id>:<event> is the idempotency key), retried with backoff. Not in redlock mode.", schema: map[string]any{"type": []string{"array", "null"}, "items": ref("notification")}},
		"pools":         {desc: "Pools of slots shared by jobs: name -> number of slots, e.g. {exports: 3}. A job with pool: <name> needs a slot of its pool as well as one of its own, across all replicas and all the pool's jobs. Not in redlock mode.", schema: map[string]any{"type": []string{"object", "null"}, "propertyNames": map[string]any{"pattern": `^[A-Za-z0-9_.-]{1,128}$`}, "additionalProperties": integerIn(1, scheduler.MaxPoolSize)}},
		"jobs":          {desc: "The jobs. Write jobs: [] for a replica that runs none.", schema: map[string]any{"type": []string{"array", "null"}, "items": ref("job")}},
	},
	"store": {
		"url":                      {desc: "redis:// or rediss:// (TLS), with optional user:password@ and /db. Leave it out for the embedded in-process store (one replica only). In sentinel and cluster mode it gives only credentials, database and TLS.", schema: orVariable(map[string]any{"type": "string", "pattern": `^rediss?://`})},
		"mode":                     {desc: "How Redis is deployed: standalone (one server), sentinel, cluster or redlock (3 or more independent masters; mutexes only).", schema: enum(modes...), def: DefaultMode},
		"sentinel":                 {desc: "mode: sentinel only: the master's name and the sentinels' addresses.", schema: ref("sentinel")},
		"cluster":                  {desc: "mode: cluster only: seed addresses of the Redis Cluster.", schema: ref("cluster")},
		"redlock":                  {desc: "mode: redlock only: the independent masters, at least 3.", schema: ref("redlock")},
		"tls":                      {desc: "TLS settings for rediss:// URLs (and, in sentinel and cluster mode, TLS on whenever present).", schema: ref("tls")},
		"key_prefix":               {desc: "Starts every key. No '{', '}' or whitespace: they would break the Redis Cluster hash tag.", schema: orVariable(map[string]any{"type": "string", "pattern": `^[^{}\s]+$`}), def: DefaultKeyPrefix},
		"max_clock_skew":           {desc: "The clock difference between replicas that must still give exactly once. Greater than 0.", schema: duration, def: DefaultMaxClockSkew.String()},
		"min_replicas_ack":         {desc: "A claim or renewal counts only once this many replicas of the primary acknowledged it (Redis WAIT). 0 is off. Not with redlock or the embedded store.", schema: integer(0), def: 0},
		"min_replicas_ack_timeout": {desc: "How long to wait for min_replicas_ack acknowledgements.", schema: duration, def: DefaultMinReplicasAckTimeout.String()},
		"data_dir":                 {desc: "Embedded store only (no url): the directory where it keeps its state; relative to the table's directory. Default $STATE_DIRECTORY (systemd), else <table name>.data beside the table. One daemon per directory.", schema: text},
	},
	"tls": {
		"ca_file":              {desc: "PEM file of the CA that signed Redis' certificate; default the system's roots.", schema: text},
		"cert_file":            {desc: "PEM client certificate, for servers that require one; needs key_file.", schema: text},
		"key_file":             {desc: "PEM key of cert_file.", schema: text},
		"server_name":          {desc: "The name to verify in Redis' certificate; default the host of the URL.", schema: text},
		"insecure_skip_verify": {desc: "Skip verifying Redis' certificate. Testing only.", schema: boolean(), def: false},
	},
	"sentinel": {
		"master":   {desc: "The name of the master the sentinels watch.", schema: text},
		"addrs":    {desc: "The sentinels' host:port addresses.", schema: list(ref("hostport"), 1)},
		"username": {desc: "The sentinels' own ACL user, if they have one.", schema: text},
		"password": {desc: "The sentinels' own password, if they have one; use ${VAR}.", schema: text},
	},
	"cluster": {
		"addrs": {desc: "host:port of one or more nodes of the Redis Cluster.", schema: list(ref("hostport"), 1)},
	},
	"redlock": {
		"urls": {desc: "redis:// or rediss:// URLs of at least 3 independent masters; a majority of them must agree.", schema: list(orVariable(map[string]any{"type": "string", "pattern": `^rediss?://`}), 3)},
	},
	"admin": {
		"listen":        {desc: "host:port to serve on; \":9090\" means every interface. --admin-listen overrides it.", schema: text},
		"token":         {desc: "Bearer token every /api/v1 request and the console require (reads included; /healthz, /readyz and /metrics stay open); run refuses a non-loopback listen address without one or a client_ca_file. Use ${VAR}.", schema: text},
		"allowed_hosts": {desc: "Host names (no scheme, port or path) the admin server answers besides its listen address and loopback names; requests naming another Host get 421 (DNS rebinding).", schema: list(text, 0)},
		"rate_limit":    {desc: "Requests per second each client IP may make to /api/v1 and the console; beyond it 429. 0 means no limit.", schema: integer(0), def: 20},
		"rate_burst":    {desc: "Requests a client may make at once before rate_limit applies.", schema: integer(1), def: 40},
		"tls":           {desc: "HTTPS on the admin listener, for teams that expose it beyond loopback.", schema: ref("admin_tls")},
		"read_only":     {desc: "true refuses every action — trigger, pause, resume, backfill, cancel and retry — on the JSON API (403) and hides and refuses them on the console; reads are unchanged.", schema: boolean(), def: false},
		"trace_url":     {desc: "A link from each run's page on the console to its trace: an http:// or https:// URL in which {trace_id} is replaced by the run's trace id, e.g. https://tempo.example/trace/{trace_id}.", schema: orVariable(map[string]any{"type": "string", "pattern": `^https?://[^/?#].*\{trace_id\}`})},
	},
	"admin_tls": {
		"cert_file":      {desc: "PEM certificate the admin server presents; needs key_file.", schema: text},
		"key_file":       {desc: "PEM key of cert_file.", schema: text},
		"client_ca_file": {desc: "PEM CAs; when set every client must present a certificate they signed (mutual TLS), which counts as authentication.", schema: text},
	},
	"job": {
		"name":              {desc: "The job's name: [A-Za-z0-9_.-]{1,128} but not \".\" or \"..\", unique in the table.", schema: orVariable(map[string]any{"type": "string", "pattern": scheduler.JobNamePattern, "not": map[string]any{"enum": []any{".", ".."}}})},
		"schedule":          {desc: "When to run: a cron spec of 5 fields (6 with seconds first), @hourly/@daily/..., or \"@every 10s\" (aligned to the Unix epoch).", schema: text},
		"timezone":          {desc: "IANA time zone the cron spec is read in, e.g. Asia/Shanghai. Default UTC; never Local.", schema: text, def: "UTC"},
		"offset":            {desc: "\"@every\" only: shifts the instants off the epoch grid (less than the period).", schema: duration},
		"command":           {desc: "Command job: the program and its arguments (argv, no shell). Exactly one of command, http or func.", schema: list(text, 1)},
		"http":              {desc: "HTTP job: the request to send. Exactly one of command, http or func.", schema: ref("http")},
		"func":              {desc: "A Go function registered by a program embedding Solocron (config.WithFuncs); not available in the daemon. Exactly one of command, http or func.", schema: text},
		"dir":               {desc: "Command jobs: the working directory; default the scheduler's.", schema: text},
		"env":               {desc: "Command jobs: variables added to the environment. SOLOCRON_* variables are set by the scheduler.", schema: strMap()},
		"kill_grace":        {desc: "Command jobs: time between SIGTERM and SIGKILL to the process group when a run is stopped; default the shorter of 10s and lease/3; at most lease/2 (a lost lease is declared kill_grace + 0.5s early so the group is gone before the slot can be given away).", schema: duration},
		"concurrency":       {desc: "Runs of this job in flight at once, across all replicas (0 means the default). 1 with store mode redlock.", schema: integerIn(0, scheduler.MaxConcurrency), def: scheduler.DefaultConcurrency},
		"overlap":           {desc: "When all slots are busy: skip the run, wait (first in, first out, up to max_wait), or replace the oldest run in flight of an earlier instant (none: the run is skipped).", schema: enum(scheduler.OverlapSkip, scheduler.OverlapWait, scheduler.OverlapReplace), def: scheduler.OverlapSkip},
		"max_wait":          {desc: "overlap: wait only: how long a run may queue for a slot; default starting_deadline.", schema: duration},
		"lease":             {desc: "The claim's lifetime, renewed every lease/3 while the job runs; a run whose renewals fail for that long loses it.", schema: duration, def: scheduler.DefaultLease.String()},
		"timeout":           {desc: "A run lasting longer is cancelled and recorded timed_out. 0 means none.", schema: duration, def: "0s"},
		"retries":           {desc: "Extra attempts inside the same run, each with a new fencing token.", schema: integer(0), def: 0},
		"retry_backoff":     {desc: "Delay before the first retry; doubles each time, with jitter.", schema: duration, def: scheduler.DefaultRetryBackoff.String()},
		"jitter":            {desc: "Delays each run by up to this much, the same on every replica (derived from the run id). At most the schedule's shortest interval.", schema: duration, def: "0s"},
		"starting_deadline": {desc: "A run not started this long after its instant is recorded missed.", schema: duration, def: scheduler.DefaultStartingDeadline.String()},
		"catchup_window":    {desc: "After all replicas were down: runs missed inside this window are run once. 0 means none.", schema: duration, def: "0s"},
		"catchup":           {desc: "Which missed runs catch-up runs: the latest only, or all (oldest first).", schema: enum(scheduler.CatchupLatest, scheduler.CatchupAll), def: scheduler.CatchupLatest},
		"on_lease_lost":     {desc: "What a lost lease does to a running job: cancel it, or continue (log, count, and let it finish; for jobs fenced downstream).", schema: enum(scheduler.LeaseLostCancel, scheduler.LeaseLostContinue), def: scheduler.LeaseLostCancel},
		"paused":            {desc: "true keeps the job from starting; scheduler pause/resume act cluster-wide.", schema: boolean(), def: false},
		"history_limit":     {desc: "Finished run records kept in the store for this job (0 means the default).", schema: integerIn(0, scheduler.MaxHistoryLimit), def: scheduler.DefaultHistoryLimit},
		"notify":            {desc: "Names of notifications (from notifications:) told of this job's events.", schema: list(orVariable(map[string]any{"type": "string", "pattern": `^[A-Za-z0-9_.-]{1,64}$`}), 0)},
		"log_output":        {desc: "Command jobs: the level the job's output lines are logged at; debug keeps output out of an INFO log.", schema: enum("debug", "info"), def: "debug"},

		"blackouts":            {desc: "Windows in which scheduled (and catch-up) instants do not run but are recorded skipped_blackout: {cron, duration, timezone} (each cron instant opens a window of duration) or {from, to} (RFC 3339; from inclusive, to exclusive). Manual runs still run.", schema: list(ref("blackout"), 0)},
		"pool":                 {desc: "A pool (from pools:) whose slots this job shares with its other jobs: each run needs a free slot of the pool as well as one of its own; overlap applies to whichever is full (replace stops only this job's runs). Moving a job into or out of a pool keeps its state (a job's keys depend on its name only). Not in redlock mode.", schema: orVariable(map[string]any{"type": "string", "pattern": `^[A-Za-z0-9_.-]{1,128}$`})},
		"pause_after_failures": {desc: "Pause the job cluster-wide after this many runs in a row end failed, timed_out or lease_lost (a success resets the count; scheduler resume clears it). The run that paused it says why in its record. 0 means never.", schema: integer(0), def: 0},
	},
	"blackout": {
		"cron":     {desc: "When each window opens: a cron spec (5 fields, 6 with seconds first) or @daily/...; not @every. With duration.", schema: text},
		"duration": {desc: "How long each window opened by cron lasts.", schema: duration},
		"timezone": {desc: "IANA time zone cron is read in; default UTC.", schema: text, def: "UTC"},
		"from":     {desc: "A one-off window's start, RFC 3339 (inclusive). With to.", schema: map[string]any{"type": "string", "format": "date-time"}},
		"to":       {desc: "A one-off window's end, RFC 3339 (exclusive).", schema: map[string]any{"type": "string", "format": "date-time"}},
	},
	"notification": {
		"name":    {desc: "How jobs refer to it in notify: [A-Za-z0-9_.-]{1,64}, unique.", schema: orVariable(map[string]any{"type": "string", "pattern": `^[A-Za-z0-9_.-]{1,64}$`})},
		"url":     {desc: "Absolute http:// or https:// URL the POSTs go to. Credentials in it are sent, never logged.", schema: orVariable(map[string]any{"type": "string", "pattern": `^https?://[^/?#]`})},
		"on":      {desc: "The events sent: failed, timed_out, lease_lost, missed, recovered (the first success after failures), paused.", schema: list(enum(notify.Events...), 1)},
		"headers": {desc: "Headers added to every POST; Solocron-* and Content-Type are the scheduler's.", schema: strMap()},
		"secret":  {desc: "Signs each body: Solocron-Signature: sha256=<hex HMAC-SHA256 of the body>. Use ${VAR}; never logged.", schema: text},
		"timeout": {desc: "Bounds one POST.", schema: duration, def: notify.DefaultTimeout.String()},
	},
	"http": {
		"method":           {desc: "The HTTP method; default GET.", schema: orVariable(map[string]any{"type": "string", "pattern": "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$"}), def: "GET"},
		"url":              {desc: "Absolute http:// or https:// URL.", schema: orVariable(map[string]any{"type": "string", "pattern": `^https?://[^/?#]`})},
		"headers":          {desc: "Request headers. Idempotency-Key, Solocron-Fencing-Token and Solocron-Fencing-Slot are set by the scheduler.", schema: strMap()},
		"body":             {desc: "The request body.", schema: text},
		"expect_status":    {desc: "Status codes that count as success; default any 2xx.", schema: list(orVariable(map[string]any{"type": "integer", "minimum": 100, "maximum": 599}), 1)},
		"follow_redirects": {desc: "Which redirects the job follows: same_host (default; never https to http), all, or none. A refused redirect fails the run.", schema: enum("same_host", "all", "none"), def: "same_host"},
	},
}
