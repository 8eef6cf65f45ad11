package console

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/solocron/solocron/scheduler"
)

// backfillTimes are the forms a backfill's from and to may take: RFC 3339,
// or what a datetime-local field sends, read as UTC.
var backfillTimes = []string{time.RFC3339, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02 15:04"}

func parseBackfillTime(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	for _, f := range backfillTimes {
		if t, err := time.ParseInLocation(f, s, time.UTC); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// backfill starts the job's backfill from the job page's form (from, to,
// parallel); it answers the error itself and reports whether it started.
func (c *Console) backfill(w http.ResponseWriter, r *http.Request, j scheduler.Job) bool {
	from, ok1 := parseBackfillTime(r.PostFormValue("from"))
	to, ok2 := parseBackfillTime(r.PostFormValue("to"))
	if !ok1 || !ok2 {
		c.fail(w, r, http.StatusBadRequest, "From and to must be times in UTC: 2026-11-20T00:00 or RFC 3339.")
		return false
	}
	parallel := 1
	if s := strings.TrimSpace(r.PostFormValue("parallel")); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > scheduler.MaxBackfillParallel {
			c.fail(w, r, http.StatusBadRequest, "Parallel must be a whole number from 1 to "+strconv.Itoa(scheduler.MaxBackfillParallel)+".")
			return false
		}
		parallel = n
	}
	ctx, cancel := c.ctx(r)
	defer cancel()
	_, err := c.cfg.Control.Backfill(ctx, j, from, to, parallel)
	msg := func(err error) string { return strings.TrimPrefix(err.Error(), "scheduler: ") }
	switch {
	case err == nil:
		c.log.Info("console: backfill started", "job", j.Name, "from", from, "to", to, "parallel", parallel, "remote", r.RemoteAddr)
		return true
	case errors.Is(err, scheduler.ErrBackfillRange):
		c.fail(w, r, http.StatusBadRequest, msg(err))
	case errors.Is(err, scheduler.ErrBackfillBusy):
		c.fail(w, r, http.StatusConflict, msg(err))
	case errors.Is(err, scheduler.ErrBackfillUnsupported):
		c.fail(w, r, http.StatusNotImplemented, msg(err))
	default:
		c.storeFailed(w, r, err)
	}
	return false
}
