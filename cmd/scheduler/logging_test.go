package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/config"
	"github.com/solocron/solocron/internal/testkit"
)

// JSON logs write durations as the table does ("30s"), also inside groups
// (the store's max_clock_skew), and go-redis' own lines come through the
// same logger, as JSON.
func TestJSONLogs(t *testing.T) {
	var buf testkit.SyncBuffer
	c := &cli{stderr: &buf, logFormat: "json", logLevel: "debug"}
	if err := c.setupLog(); err != nil {
		t.Fatal(err)
	}
	c.log.Info("durations", "grace", 30*time.Second, "store", config.Store{Mode: "standalone", MaxClockSkew: 2 * time.Second})

	// A sentinel client that finds no sentinel logs through go-redis'
	// logger.
	rc := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "m", SentinelAddrs: []string{freeAddr(t)}, MaxRetries: -1})
	defer rc.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_ = rc.Ping(ctx).Err()

	var sawRedis bool
	sc := bufio.NewScanner(bytes.NewReader([]byte(buf.String())))
	for sc.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Errorf("a log line that is not JSON: %q", sc.Text())
			continue
		}
		msg, _ := rec["msg"].(string)
		switch {
		case msg == "durations":
			if rec["grace"] != "30s" {
				t.Errorf("grace logged as %v, want \"30s\"", rec["grace"])
			}
			if st, _ := rec["store"].(map[string]any); st["max_clock_skew"] != "2s" || st["mode"] != "embedded" {
				t.Errorf("store logged as %v, want max_clock_skew \"2s\" and mode embedded", rec["store"])
			}
		case strings.HasPrefix(msg, "redis client: "):
			sawRedis = true
		}
	}
	if !sawRedis {
		t.Errorf("no go-redis line in the log:\n%s", buf.String())
	}
}
