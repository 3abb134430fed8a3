package faults

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stagedoor/once/internal/testservers"
)

// pgPrograms runs the PostgreSQL server programs (initdb, pg_ctl,
// pg_basebackup) of the newest installed version. When the test runs as
// root, they run as the postgres OS user, as scripts/services.sh does
// (initdb and postgres refuse root).
type pgPrograms struct {
	bin  string
	asPG bool
}

// findPgPrograms finds the programs, or ends t as Unavailable.
func findPgPrograms(t testing.TB) pgPrograms {
	t.Helper()
	bin, err := pgBinDir()
	if err != nil {
		testservers.Unavailable(t, "PostgreSQL server programs (initdb, pg_ctl, pg_basebackup)", err)
	}
	pg := pgPrograms{bin: bin, asPG: os.Geteuid() == 0}
	if pg.asPG {
		if _, err := user.Lookup("postgres"); err != nil {
			testservers.Unavailable(t, "the postgres OS user (to run PostgreSQL as root)", err)
		}
	}
	return pg
}

// initdb makes a data directory (user postgres, trust authentication on
// loopback, replication allowed) to copy for each server, deleted when t
// ends.
func (pg pgPrograms) initdb(t testing.TB) string {
	t.Helper()
	data, err := pg.initdbIn(pg.tempDir(t))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// initdbIn is initdb into dir (see tempDir), for any goroutine: it returns
// the data directory and initdb's error.
func (pg pgPrograms) initdbIn(dir string) (string, error) {
	data := filepath.Join(dir, "template")
	return data, pg.run("initdb", "-D", data, "-U", "postgres", "-E", "UTF8", "--no-sync", "--auth=trust")
}

// tempDir makes a directory the programs can write, deleted when t ends.
func (pg pgPrograms) tempDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "once-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("removing %s: %v", dir, err)
		}
	})
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if pg.asPG {
		if err := chownToPostgres(dir); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// run runs prog (a program of the PostgreSQL bin directory, or cp), as the
// postgres OS user when root.
func (pg pgPrograms) run(prog string, args ...string) error {
	path := prog
	if prog != "cp" {
		path = filepath.Join(pg.bin, prog)
	}
	cmd := exec.Command(path, args...)
	if pg.asPG {
		cmd = exec.Command("runuser", append([]string{"-u", "postgres", "--", path}, args...)...)
	}
	cmd.Dir = "/"
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", prog, strings.Join(args, " "), err, lastLines(string(out), 10))
	}
	return nil
}

// pgBinDir is the newest /usr/lib/postgresql/*/bin holding initdb, else
// the directory of initdb on PATH.
func pgBinDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	version := func(d string) int { v, _ := strconv.Atoi(filepath.Base(filepath.Dir(d))); return v }
	slices.SortFunc(dirs, func(a, b string) int { return version(b) - version(a) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	path, err := exec.LookPath("initdb")
	if err != nil {
		return "", err
	}
	return filepath.Dir(path), nil
}

func chownToPostgres(dir string) error {
	u, err := user.Lookup("postgres")
	if err != nil {
		return err
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return os.Chown(dir, uid, gid)
}

// postmasterPid reads the first line of data's postmaster.pid.
func postmasterPid(data string) (int, error) {
	b, err := os.ReadFile(filepath.Join(data, "postmaster.pid"))
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return strconv.Atoi(strings.TrimSpace(line))
}

// childPids lists the processes whose parent is pid, a single-threaded
// process (Linux's /proc/PID/task/PID/children, one read).
func childPids(pid int) ([]int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		return nil, err
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		c, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("/proc/%d/task/%d/children: %q", pid, pid, b)
		}
		out = append(out, c)
	}
	return out, nil
}

// alive reports whether pid runs (exists and is not a zombie).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i >= 0 && len(b) > i+2 && b[i+2] != 'Z'
}
