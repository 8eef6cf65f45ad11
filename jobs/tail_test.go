package jobs

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

func TestTail(t *testing.T) {
	for _, tc := range []struct {
		name    string
		limit   int
		writes  []string
		want    string
		dropped int64
	}{
		{"empty", 4, nil, "", 0},
		{"under", 4, []string{"ab"}, "ab", 0},
		{"exact", 4, []string{"ab", "cd"}, "abcd", 0},
		{"wraps", 4, []string{"abc", "de"}, "bcde", 1},
		{"wraps twice", 4, []string{"abc", "def", "gh"}, "efgh", 4},
		{"one big write", 4, []string{"x", "abcdefgh"}, "efgh", 5},
		{"big write exactly limit", 4, []string{"xy", "abcd"}, "abcd", 2},
		{"many small", 3, strings.Split("abcdefghij", ""), "hij", 7},
		{"empty writes", 3, []string{"", "ab", "", "cd", ""}, "bcd", 1},
		{"default limit", 0, []string{strings.Repeat("z", 5000)}, strings.Repeat("z", 4096), 904},
		{"negative limit", -1, []string{"ok"}, "ok", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tail := NewTail(tc.limit)
			for _, w := range tc.writes {
				n, err := tail.Write([]byte(w))
				if n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", w, n, err)
				}
			}
			if got := tail.String(); got != tc.want {
				t.Errorf("String = %q, want %q", got, tc.want)
			}
			if got := tail.Dropped(); got != tc.dropped {
				t.Errorf("Dropped = %d, want %d", got, tc.dropped)
			}
		})
	}
}

func TestTailZeroValue(t *testing.T) {
	var tail Tail
	fmt.Fprint(&tail, strings.Repeat("a", 5000))
	if got := tail.String(); got != strings.Repeat("a", 4096) || tail.Dropped() != 904 {
		t.Errorf("zero Tail kept %d bytes, dropped %d", len(got), tail.Dropped())
	}
}

// TestTailConcurrent: writes from many goroutines (a command's two streams)
// lose nothing from the byte count and keep whole writes when they fit.
func TestTailConcurrent(t *testing.T) {
	const writers, writes = 8, 1000
	tail := NewTail(64)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			for range writes {
				fmt.Fprintf(tail, "%d", i%10) // one byte per write
				_ = tail.String()
			}
		})
	}
	wg.Wait()
	if got := int64(len(tail.String())) + tail.Dropped(); got != writers*writes {
		t.Errorf("kept + dropped = %d, want %d", got, writers*writes)
	}
}

func TestContextDefaults(t *testing.T) {
	ctx := context.Background()
	if Output(ctx) != io.Discard {
		t.Error("Output without WithOutput is not io.Discard")
	}
	if Logger(ctx) != slog.Default() {
		t.Error("Logger without WithLogger is not slog.Default()")
	}
	if Output(WithOutput(ctx, nil)) != io.Discard || Logger(WithLogger(ctx, nil)) != slog.Default() {
		t.Error("nil writer or logger not treated as none")
	}
	tail := NewTail(8)
	l := slog.New(slog.DiscardHandler)
	ctx = WithLogger(WithOutput(ctx, tail), l)
	if Output(ctx) != tail || Logger(ctx) != l {
		t.Error("values set are not returned")
	}
}
