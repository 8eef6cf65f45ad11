package store

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A call counts as having sent nothing only when every part of it failed
// before its request went out: a stopping replica then has nothing to settle.
// Any failure that may have lost an answer — a timeout, a reset, a Redlock
// quorum short of answers, one node of a Cluster pipeline — counts as sent.
func TestSentNothingOnlyWhenNoRequestWentOut(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close() // nothing listens there now
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	refused := c.EvalSha(context.Background(), "0000000000000000000000000000000000000000", []string{"k"}).Err()
	if refused == nil {
		t.Fatal("a call to a closed port succeeded")
	}
	closed := redis.NewClient(&redis.Options{Addr: addr})
	_ = closed.Close()
	afterClose := closed.Ping(context.Background()).Err()
	reset := &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"connection refused", refused, true},
		{"client closed", afterClose, true},
		{"wrapped refusal", fmt.Errorf("claim: %w", refused), true},
		{"every node refused", errors.Join(refused, fmt.Errorf("node 2: %w", refused)), true},
		{"one node refused, one reset", errors.Join(refused, reset), false},
		{"reset after the request", reset, false},
		{"deadline", context.DeadlineExceeded, false},
		{"pool timeout", redis.ErrPoolTimeout, true},
		{"no error", nil, false},
		{"an error of the script", errors.New("ERR user_script:1: boom"), false},
	} {
		if got := SentNothing(c.err); got != c.want {
			t.Errorf("%s (%v): sentNothing %v, want %v", c.name, c.err, got, c.want)
		}
	}
}

// splitInto splits as strings.SplitN does, into the slice it is given.
func TestSplitInto(t *testing.T) {
	for _, s := range []string{"", "|", "a", "a|b", "decided||failed|12|r1", "a|b|c|d|e|f|g", "||||||", "x|y|z|"} {
		for _, n := range []int{1, 2, 5} {
			got := splitInto(make([]string, 0, 1), s, n)
			if want := strings.SplitN(s, "|", n); !slices.Equal(got, want) {
				t.Errorf("splitInto(%q, %d) = %q, want %q", s, n, got, want)
			}
		}
	}
}
