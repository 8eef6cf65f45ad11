package jobs

import (
	"os"
	"strings"
)

// inheritedEnv names the variables of the scheduler's own environment that a
// command job inherits; nothing else of it reaches a job. They describe the
// machine and the user, never a credential, and programs need them to find
// programs, files, the locale and the time zone. Everything else a job needs
// (credentials included) it names in Command.Env, where the table says so.
var inheritedEnv = []string{
	"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TMPDIR", "TZ",
	"LANG", "LANGUAGE", // and every LC_* variable
}

// Inherited reports whether a command job inherits the scheduler's variable
// name: PATH, HOME, USER, LOGNAME, SHELL, TMPDIR, TZ, LANG, LANGUAGE and
// LC_*. The scheduler's other variables (SOLOCRON_ADMIN_TOKEN, REDIS_URL, a
// cloud credential) never reach a job unless its Env names them.
func Inherited(name string) bool {
	if strings.HasPrefix(name, "LC_") {
		return true
	}
	for _, k := range inheritedEnv {
		if k == name {
			return true
		}
	}
	return false
}

// envSupervisorGorace marks a GORACE the supervisor got only for itself.
const envSupervisorGorace = "SOLOCRON_JOB_SUPERVISOR_GORACE"

// supervisorGorace gives a supervisor (the scheduler's own binary, maybe
// built with -race) the scheduler's GORACE when the job's environment has
// none, marked so that the supervisor takes it out again before it starts
// the program: the job's environment stays exactly what environ built.
func supervisorGorace(env []string) []string {
	v, ok := os.LookupEnv("GORACE")
	if !ok {
		return env
	}
	for _, kv := range env {
		if strings.HasPrefix(kv, "GORACE=") {
			return env
		}
	}
	return append(env, "GORACE="+v, envSupervisorGorace+"=1")
}

// programEnv is the supervisor's environment without what was added for
// the supervisor alone.
func programEnv(environ []string) []string {
	_, strip := os.LookupEnv(envSupervisorGorace)
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if k == envSupervisor || k == envSupervisorGorace || (strip && k == "GORACE") {
			continue
		}
		out = append(out, kv)
	}
	return out
}
