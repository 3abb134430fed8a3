package peers

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// serverCPU reads the CPU time of a server's processes from
// /proc/<pid>/schedstat (its first field: time spent on a CPU, in
// nanoseconds).
type serverCPU interface {
	read() (time.Duration, bool)
}

// schedstat returns the first field of a schedstat file.
func schedstat(file string) (time.Duration, bool) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, false
	}
	ns, err := strconv.ParseInt(f[0], 10, 64)
	return time.Duration(ns), err == nil
}

// pgBackends is the CPU of the PostgreSQL backends serving one database:
// the processes whose title is "postgres: … <user> <database> …". The
// WAL writer, checkpointer and other shared processes are not counted;
// a backend flushes its own commit's WAL, so the commits are.
type pgBackends struct{ database string }

func (p pgBackends) read() (time.Duration, bool) {
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return 0, false
	}
	want := " " + p.database + " "
	var sum time.Duration
	found := false
	for _, d := range dirs {
		if _, err := strconv.Atoi(d.Name()); err != nil {
			continue
		}
		title, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err != nil || !strings.HasPrefix(string(title), "postgres: ") || !strings.Contains(string(title), want) {
			continue
		}
		if ns, ok := schedstat(filepath.Join("/proc", d.Name(), "schedstat")); ok {
			sum += ns
			found = true
		}
	}
	return sum, found
}

// redisServer is the CPU of every thread of the redis-server process
// that serves the run (its pid as the server reports it).
type redisServer struct{ pid string }

// redisPID returns the process id the server reports (INFO server's
// process_id): several redis-server processes may run on one machine.
func redisPID(info string) (string, bool) {
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			return v, true
		}
	}
	return "", false
}

func (r redisServer) read() (time.Duration, bool) {
	tasks, err := os.ReadDir(filepath.Join("/proc", r.pid, "task"))
	if err != nil {
		return 0, false
	}
	var sum time.Duration
	for _, t := range tasks {
		if ns, ok := schedstat(filepath.Join("/proc", r.pid, "task", t.Name(), "schedstat")); ok {
			sum += ns
		}
	}
	return sum, true
}

// noServer is where the server's processes are not visible.
type noServer struct{}

func (noServer) read() (time.Duration, bool) { return 0, false }
