package fencing_test

import (
	"testing"

	"github.com/solocron/solocron/internal/fencing"
	"github.com/solocron/solocron/internal/redistest"
)

// eval runs body after fence.lua and returns its integer answers.
func eval(t *testing.T, body string, args ...any) []int64 {
	t.Helper()
	_, c := redistest.Mini(t)
	v, err := c.Eval(t.Context(), fencing.Lua+body, nil, args...).Int64Slice()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestFenceAfter(t *testing.T) {
	const now = 1764000000123456 // 16 digits: exact in a Lua double
	for _, c := range []struct {
		name string
		call string
		want int64
	}{
		{"clock ahead of the last token", "fence_after(ARGV[1], ARGV[1] - 5)", now},
		{"clock equal to the last token", "fence_after(ARGV[1], ARGV[1])", now + 1},
		{"clock behind the last token", "fence_after(ARGV[1], ARGV[1] + 1000)", now + 1001},
		{"a floor above the last token", "fence_after(ARGV[1], ARGV[1] - 5, ARGV[1] + 7)", now + 8},
		{"nothing remembered", "fence_after(ARGV[1], nil, false)", now},
		{"no token at all", "fence_after(ARGV[1])", now},
		{"a stored string", "fence_after(ARGV[1], tostring(ARGV[1] + 2))", now + 3},
		{"written back", "tonumber(fence_int(fence_after(ARGV[1], ARGV[1])))", now + 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := eval(t, "return {"+c.call+"}", now)
			if got[0] != c.want {
				t.Errorf("%s = %d, want %d", c.call, got[0], c.want)
			}
		})
	}
}

func TestFenceClock(t *testing.T) {
	got := eval(t, "local ms, us = fence_clock() return {ms, us}")
	ms, us := got[0], got[1]
	if us/1000 != ms {
		t.Errorf("fence_clock() = %d ms, %d µs: not one instant", ms, us)
	}
	if us < 1_600_000_000_000_000 {
		t.Errorf("fence_clock() µs = %d: not microseconds since the epoch", us)
	}
}

// TestTokensRise: tokens issued one after another rise strictly, even when
// they come faster than the clock's resolution.
func TestTokensRise(t *testing.T) {
	got := eval(t, `
local _, now = fence_clock()
local out, last = {}, nil
for i = 1, 50 do
  last = fence_after(now, last)
  out[i] = last
end
return out`)
	for i := 1; i < len(got); i++ {
		if got[i] <= got[i-1] {
			t.Fatalf("token %d = %d, not above %d", i, got[i], got[i-1])
		}
	}
}

func TestFenceNowUS(t *testing.T) {
	got := eval(t, "local us = fence_now_us() local _, n = fence_clock() return {tonumber(us), n, #us}")
	if got[0] > got[1] || got[1]-got[0] > 1_000_000 {
		t.Errorf("fence_now_us() = %d, fence_clock() = %d µs just after", got[0], got[1])
	}
	if got[2] != 16 {
		t.Errorf("fence_now_us() has %d digits, want 16", got[2])
	}
}
