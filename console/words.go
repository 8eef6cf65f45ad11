package console

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// words says a schedule in English for the common shapes of cron specs and
// descriptors; for the others it answers "" and the page shows the spec as
// written only.
func words(spec string) string {
	s := strings.TrimSpace(spec)
	if strings.HasPrefix(s, "CRON_TZ=") || strings.HasPrefix(s, "TZ=") {
		if _, rest, ok := strings.Cut(s, " "); ok {
			s = strings.TrimSpace(rest)
		}
	}
	switch s {
	case "@yearly", "@annually":
		return "every year on 1 January at 00:00"
	case "@monthly":
		return "every month on the 1st at 00:00"
	case "@weekly":
		return "every Sunday at 00:00"
	case "@daily", "@midnight":
		return "every day at 00:00"
	case "@hourly":
		return "every hour, on the hour"
	}
	if d, ok := strings.CutPrefix(s, "@every "); ok {
		if p, err := time.ParseDuration(strings.TrimSpace(d)); err == nil {
			return "every " + human(p)
		}
		return ""
	}
	f := strings.Fields(s)
	sec := "0"
	switch len(f) {
	case 5:
	case 6:
		sec, f = f[0], f[1:]
	default:
		return ""
	}
	min, hour, dom, mon, dow := f[0], f[1], f[2], f[3], f[4]
	if mon != "*" {
		return ""
	}
	var when string
	switch {
	case sec == "*" && min == "*" && hour == "*":
		when = "every second"
	case step(sec) > 0 && min == "*" && hour == "*":
		when = fmt.Sprintf("every %d seconds", step(sec))
	case sec == "0" && min == "*" && hour == "*":
		when = "every minute"
	case sec == "0" && step(min) > 0 && hour == "*":
		when = fmt.Sprintf("every %d minutes", step(min))
	case sec == "0" && num(min) >= 0 && hour == "*":
		when = fmt.Sprintf("every hour at minute %d", num(min))
	case sec == "0" && num(min) >= 0 && step(hour) > 0:
		when = fmt.Sprintf("every %d hours at minute %d", step(hour), num(min))
	case sec == "0" && num(min) >= 0 && num(hour) >= 0:
		when = fmt.Sprintf("at %02d:%02d", num(hour), num(min))
	default:
		return ""
	}
	switch {
	case dom == "*" && dow == "*":
		if strings.HasPrefix(when, "at ") {
			return "every day " + when
		}
		return when
	case dom == "*" && days(dow) != "":
		return when + " on " + days(dow)
	case dow == "*" && num(dom) > 0:
		return when + " on day " + dom + " of the month"
	}
	return ""
}

// step reads "*/n" as n, or answers 0.
func step(f string) int {
	if n, ok := strings.CutPrefix(f, "*/"); ok {
		if v, err := strconv.Atoi(n); err == nil && v > 0 {
			return v
		}
	}
	return 0
}

// num reads a plain number, or answers -1.
func num(f string) int {
	v, err := strconv.Atoi(f)
	if err != nil || v < 0 {
		return -1
	}
	return v
}

var dayNames = []string{"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}

// days says a day-of-week field: "1-5" Mon–Fri, "0,6" Sun, Sat.
func days(f string) string {
	var out []string
	for _, part := range strings.Split(f, ",") {
		name := func(s string) string {
			if n := num(s); n >= 0 && n < len(dayNames) {
				return dayNames[n]
			}
			if len(s) == 3 {
				return strings.ToUpper(s[:1]) + strings.ToLower(s[1:])
			}
			return ""
		}
		if a, b, ok := strings.Cut(part, "-"); ok {
			x, y := name(a), name(b)
			if x == "" || y == "" {
				return ""
			}
			out = append(out, x+"–"+y)
			continue
		}
		x := name(part)
		if x == "" {
			return ""
		}
		out = append(out, x)
	}
	return strings.Join(out, ", ")
}

// human says a duration the way a person would: 90s is "1m30s", 3h is "3h".
func human(d time.Duration) string {
	if d < 0 {
		d = -d
	}
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	case d < time.Hour:
		d = d.Round(time.Second)
		m, s := int(d/time.Minute), int(d%time.Minute/time.Second)
		if s == 0 {
			return fmt.Sprintf("%dm", m)
		}
		return fmt.Sprintf("%dm%ds", m, s)
	case d < 48*time.Hour:
		d = d.Round(time.Minute)
		h, m := int(d/time.Hour), int(d%time.Hour/time.Minute)
		if m == 0 {
			return fmt.Sprintf("%dh", h)
		}
		return fmt.Sprintf("%dh%dm", h, m)
	default:
		return fmt.Sprintf("%dd", int(d.Round(24*time.Hour).Hours()/24))
	}
}

// relative says when t is from now: "in 3h", "2m ago", "now".
func relative(t, now time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := t.Sub(now)
	switch {
	case d > -time.Second && d < time.Second:
		return "now"
	case d > 0:
		return "in " + human(d)
	default:
		return human(-d) + " ago"
	}
}
