package config_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/solocron/solocron/config"
	"github.com/solocron/solocron/notify"
)

// The notifications section and the jobs' notify: load into targets the
// scheduler takes as they are; defaults: passes notify: on.
func TestNotificationsLoad(t *testing.T) {
	text := `notifications:
  - name: ops
    url: https://hooks.example.com/solocron
    on: [failed, timed_out, lease_lost, missed, recovered, paused]
    headers: {X-Team: payments}
    secret: ${HOOK}
    timeout: 2s
  - {name: pager, url: "http://pager.internal/x", on: [failed]}
defaults:
  notify: [ops]
jobs:
  - {name: a, schedule: "@hourly", command: [x]}
  - {name: b, schedule: "@hourly", command: [x], notify: [ops, pager]}
`
	f, err := config.Parse("t.yaml", []byte(text), config.WithLookupEnv(func(k string) (string, bool) { return "s3cret", k == "HOOK" }))
	if err != nil {
		t.Fatal(err)
	}
	want := []notify.Target{
		{Name: "ops", URL: "https://hooks.example.com/solocron", On: notify.Events, Headers: map[string]string{"X-Team": "payments"}, Secret: "s3cret", Timeout: 2 * time.Second},
		{Name: "pager", URL: "http://pager.internal/x", On: []notify.Event{notify.Failed}},
	}
	if fmt.Sprintf("%v|%q|%v", f.Notifications, []string{f.Notifications[0].Secret, f.Notifications[0].Headers["X-Team"]}, f.Notifications[0].Timeout) !=
		fmt.Sprintf("%v|%q|%v", want, []string{"s3cret", "payments"}, want[0].Timeout) {
		t.Errorf("notifications: %v, want %v", f.Notifications, want)
	}
	if got := fmt.Sprint(f.Jobs[0].Notify, f.Jobs[1].Notify); got != "[ops] [ops pager]" {
		t.Errorf("notify: %s", got)
	}
	if s := fmt.Sprintf("%v %+v %#v", f.Notifications[0], f.Notifications[0], f.Notifications[0]); strings.Contains(s, "s3cret") {
		t.Errorf("a target prints its secret: %s", s)
	}
}

// Names, URLs and events are checked, each problem at its line and field.
func TestNotificationsBad(t *testing.T) {
	text := `notifications:
  - name: ops
    url: ftp://hooks.example.com/x
    on: [failed, timedout]
    headers: {Solocron-Delivery: x}
  - name: ops
    on: []
  - {name: "bad name", url: "https://user:pw@h/", on: [paused], timeout: 0s, colour: red}
jobs:
  - {name: a, schedule: "@hourly", command: [x], notify: [opps]}
  - {name: b, schedule: "@hourly", command: [x], notify: [nobody]}
`
	_, err := config.Parse("t.yaml", []byte(text))
	wantErrors(t, err,
		`3:10: notifications[0].url: must be an http:// or https:// URL`,
		`4:18: notifications[0].on[1]: unknown event "timedout" (did you mean "timed_out"?)`,
		`5:15: notifications[0].headers.Solocron-Delivery: is set by the scheduler`,
		`6:5: notifications[1].url: is required`,
		`6:11: notifications[1].name: "ops" is already the name of notifications[0]`,
		`7:9: notifications[1].on: needs at least one event: failed, timed_out`,
		`8:12: notifications[2].name: "bad name" is not a valid notification name`,
		`8:74: notifications[2].timeout: must be more than 0`,
		`8:78: notifications[2].colour: unknown field "colour"`,
		`10:59: jobs[0].notify[0]: no notification named "opps" in notifications: (did you mean "ops"?)`,
		`11:59: jobs[1].notify[0]: no notification named "nobody"`,
	)
	if strings.Contains(err.Error(), "pw") {
		t.Errorf("an error shows the URL's password: %v", err)
	}
}

// Redlock mode refuses notifications: every master would queue each event.
func TestNotificationsRedlock(t *testing.T) {
	text := `store: {mode: redlock, redlock: {urls: ["redis://a:1", "redis://b:1", "redis://c:1"]}}
notifications: [{name: ops, url: "https://h/", on: [failed]}]
jobs: []
`
	_, err := config.Parse("t.yaml", []byte(text))
	wantErrors(t, err, `2:1: notifications: need one Redis deployment`)
}
