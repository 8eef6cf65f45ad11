package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/robfig/cron/v3"
)

// robfig's parser gives the field syntax (names, ranges, steps, "?") and the
// bit sets; Next is our own. It accepts 5 fields, or 6 with seconds first.
var specParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour |
	cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// fieldNames and fieldParsers name and parse the six fields one by one, to
// tell the user which field of a bad spec is at fault.
var (
	fieldNames   = [6]string{"second", "minute", "hour", "day-of-month", "month", "day-of-week"}
	fieldParsers = [6]cron.Parser{
		cron.NewParser(cron.Second), cron.NewParser(cron.Minute), cron.NewParser(cron.Hour),
		cron.NewParser(cron.Dom), cron.NewParser(cron.Month), cron.NewParser(cron.Dow),
	}
)

// descriptors maps each accepted descriptor to whether its hour is fixed,
// which selects the daylight-saving policy (see doc.go).
var descriptors = map[string]bool{
	"@yearly": true, "@annually": true, "@monthly": true, "@weekly": true,
	"@daily": true, "@midnight": true, "@hourly": false,
}

// starBit is the bit robfig sets in a field written as "*" or "?".
const starBit = 1 << 63

const syntaxHint = `expected 5 or 6 cron fields, a descriptor such as @daily, or "@every <duration>"`

// Parse parses spec, evaluated in the IANA zone tz ("" means UTC; a CRON_TZ=
// or TZ= prefix in spec wins). offset shifts "@every" instants and must be 0
// for any other spec. See the package documentation for the syntax.
//
// Errors are *Error; the first problem found is reported, checking the
// schedule, then the time zone, then the offset.
func Parse(spec, tz string, offset time.Duration) (*Schedule, error) {
	s := &Schedule{spec: spec}
	text := strings.TrimSpace(spec)
	if text == "" {
		return nil, &Error{Field: "Schedule", Err: errors.New("empty schedule: " + syntaxHint)}
	}
	fail := func(format string, args ...any) (*Schedule, error) {
		args = append([]any{text}, args...)
		return nil, &Error{Field: "Schedule", Err: fmt.Errorf("%q: "+format, args...)}
	}

	zone, rest, err := splitZone(text)
	if err != nil {
		return fail("%w", err)
	}
	if zone != "" {
		if s.loc, err = loadZone(zone); err != nil {
			return fail("%w", err)
		}
	}

	words := strings.Fields(rest)
	switch {
	case words[0] == "@every":
		if err := s.parseEvery(words); err != nil {
			return fail("%w", err)
		}
	case strings.HasPrefix(words[0], "@"):
		fixed, known := descriptors[words[0]]
		if !known || len(words) > 1 {
			return fail("unknown descriptor; %s", syntaxHint)
		}
		sched, err := parseSpec(rest)
		if err != nil {
			return fail("%w", err)
		}
		s.cron = toFields(sched)
		s.cron.fixedHour = fixed
	default:
		if len(words) != 5 && len(words) != 6 {
			return fail("expected 5 or 6 fields, found %d", len(words))
		}
		if err := s.parseCron(words); err != nil {
			return fail("%w", err)
		}
	}

	if tzLoc, err := loadZone(tz); err != nil {
		return nil, &Error{Field: "Timezone", Err: err}
	} else if s.loc == nil {
		s.loc = tzLoc
	}

	if err := s.checkOffset(offset); err != nil {
		return nil, &Error{Field: "Offset", Err: err}
	}
	return s, nil
}

// splitZone splits a CRON_TZ=<zone> or TZ=<zone> prefix off text.
func splitZone(text string) (zone, rest string, err error) {
	var prefix string
	switch {
	case strings.HasPrefix(text, "CRON_TZ="):
		prefix = "CRON_TZ="
	case strings.HasPrefix(text, "TZ="):
		prefix = "TZ="
	default:
		return "", text, nil
	}
	after := text[len(prefix):]
	i := strings.IndexFunc(after, unicode.IsSpace)
	if i < 0 {
		return "", "", fmt.Errorf("%s must be followed by a zone name and the schedule, e.g. %sEurope/Berlin 0 3 * * *", prefix, prefix)
	}
	zone, rest = after[:i], strings.TrimSpace(after[i:])
	if zone == "" {
		return "", "", fmt.Errorf("%s needs a zone name, e.g. %sEurope/Berlin", prefix, prefix)
	}
	if strings.HasPrefix(rest, "CRON_TZ=") || strings.HasPrefix(rest, "TZ=") {
		return "", "", errors.New("more than one time zone prefix")
	}
	return zone, rest, nil
}

// loadZone loads an IANA zone; "" is UTC.
func loadZone(name string) (*time.Location, error) {
	switch name {
	case "":
		return time.UTC, nil
	case "Local":
		// Each replica's own zone: replicas on differently configured
		// machines would disagree on the instants.
		return nil, errors.New(`time zone "Local" differs from machine to machine; name an IANA zone such as "Europe/Berlin"`)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		if err.Error() == "unknown time zone "+name {
			return nil, fmt.Errorf("unknown time zone %q; expected an IANA name such as \"Europe/Berlin\" or \"UTC\"", name)
		}
		return nil, fmt.Errorf("time zone %q: %w", name, err)
	}
	return loc, nil
}

// parseEvery parses "@every <duration>".
func (s *Schedule) parseEvery(words []string) error {
	if len(words) != 2 {
		return errors.New(`"@every" takes one duration, e.g. "@every 10m"`)
	}
	d, err := time.ParseDuration(words[1])
	switch {
	case err != nil:
		return err
	case d < time.Second:
		return fmt.Errorf("period %s is shorter than 1s", d)
	case d%time.Second != 0:
		return fmt.Errorf("period %s is not a whole number of seconds", d)
	}
	s.every = int64(d / time.Second)
	return nil
}

// parseCron parses the 5 or 6 fields of a cron spec.
func (s *Schedule) parseCron(words []string) error {
	if len(words) == 5 {
		words = append([]string{"0"}, words...)
	}
	sched, err := parseSpec(strings.Join(words, " "))
	if err != nil {
		// Tell which field is at fault.
		for i, w := range words {
			if ferr := parseField(i, w); ferr != nil {
				return fmt.Errorf("%s field %q: %w", fieldNames[i], w, ferr)
			}
		}
		return err
	}
	f := toFields(sched)
	masks := [6]uint64{f.second, f.minute, f.hour, f.dom, f.month, f.dow}
	for i, m := range masks {
		if m == 0 {
			return fmt.Errorf("%s field %q lists no values", fieldNames[i], words[i])
		}
	}
	if !f.canFire() {
		return fmt.Errorf("never fires: no month matching %q has a day matching %q", words[4], words[3])
	}
	// Policy choice (see doc.go): an hour field written as "*", "*/n" or
	// "?" follows elapsed time across daylight-saving changes.
	f.fixedHour = !strings.HasPrefix(words[2], "*") && !strings.HasPrefix(words[2], "?")
	s.cron = f
	return nil
}

// parseSpec runs robfig's parser, turning a panic on odd input into an error.
func parseSpec(text string) (_ *cron.SpecSchedule, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cannot parse: %v", r)
		}
	}()
	sched, err := specParser.Parse(text)
	if err != nil {
		return nil, err
	}
	spec, ok := sched.(*cron.SpecSchedule)
	if !ok {
		return nil, fmt.Errorf("unexpected schedule type %T", sched)
	}
	return spec, nil
}

// parseField parses field i (0 = seconds) on its own.
func parseField(i int, text string) (err error) {
	if strings.ContainsAny(text, "=@") {
		// robfig would read these as a zone prefix or a descriptor.
		return fmt.Errorf("unexpected %q", text)
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cannot parse: %v", r)
		}
	}()
	_, err = fieldParsers[i].Parse(text)
	return err
}

func toFields(s *cron.SpecSchedule) fields {
	return fields{
		second: s.Second &^ starBit,
		minute: s.Minute &^ starBit,
		hour:   s.Hour &^ starBit,
		dom:    s.Dom &^ starBit,
		month:  s.Month &^ starBit,
		dow:    s.Dow &^ starBit,
		dayOr:  s.Dom&starBit == 0 && s.Dow&starBit == 0,
	}
}

// canFire reports whether some day matches. Only when both day fields must
// match can none: the day-of-week field is "*" and no listed month has a
// listed day, as in "0 0 30 2 *". February counts 29 days: leap years come.
func (f *fields) canFire() bool {
	if f.dayOr {
		return true
	}
	first := nextBit(f.dom, 1) // the smallest listed day
	for m := 1; m <= 12; m++ {
		if f.month&(1<<m) != 0 && first <= daysIn(2000, m) { // 2000 was a leap year
			return true
		}
	}
	return false
}

func (s *Schedule) checkOffset(offset time.Duration) error {
	if s.every == 0 {
		if offset != 0 {
			return fmt.Errorf("offset %s applies only to \"@every\" schedules", offset)
		}
		return nil
	}
	switch {
	case offset < 0:
		return fmt.Errorf("offset %s is negative", offset)
	case offset%time.Second != 0:
		return fmt.Errorf("offset %s is not a whole number of seconds", offset)
	case offset >= s.Every():
		return fmt.Errorf("offset %s is not less than the period %s", offset, s.Every())
	}
	s.offset = int64(offset / time.Second)
	return nil
}

// CheckZone reports what is wrong with name as a job's time zone, with
// the message Parse gives (as the Err of a Timezone *Error), or nil.
func CheckZone(name string) error {
	_, err := loadZone(name)
	return err
}
