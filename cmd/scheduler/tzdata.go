package main

// The time-zone database is compiled in (about 450 kB), so that a job's
// timezone: Asia/Shanghai works where the system has none: the container
// image (FROM scratch), a minimal VM, Windows. Go uses the system's
// database first when there is one.
import _ "time/tzdata"
