package config_test

import (
	"strings"
	"testing"

	"github.com/solocron/solocron/config"
)

// A replica id names the replica in records, tables, logs and labels:
// printable UTF-8 text of 1 to 256 bytes, whichever way it was given.
func TestCheckReplicaID(t *testing.T) {
	for _, tc := range []struct {
		id   string
		want string // a substring of the error; "" when the id is fine
	}{
		{"web-1", ""},
		{"solocron-7d9f8c6b5-x2x4q", ""},
		{"host.example.com-4242", ""},
		{"réplica 1", ""},
		{strings.Repeat("r", 256), ""},
		{"", "1 to 256 bytes"},
		{strings.Repeat("r", 257), "1 to 256 bytes"},
		{"web-1\nlevel=ERROR msg=forged", "control characters"},
		{"web-1\x1b[2J", "control characters"},
		{"web\t1", "control characters"},
		{"web-\xff", "UTF-8"},
	} {
		err := config.CheckReplicaID(tc.id)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("CheckReplicaID(%q) = %v, want an error with %q", tc.id, err, tc.want)
		}
	}
}

// In the table, replica_id is checked at its line like any other field.
func TestReplicaIDInTable(t *testing.T) {
	_, err := config.Parse("t.yaml", []byte("replica_id: \"a\\nb\"\njobs: []\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "t.yaml:1:13: replica_id: must not contain control characters") {
		t.Errorf("Parse: %v", err)
	}
	f, err := config.Parse("t.yaml", []byte("replica_id: web-1\njobs: []\n"))
	if err != nil || f.ReplicaID != "web-1" {
		t.Errorf("Parse: %v, %+v", err, f)
	}
}
