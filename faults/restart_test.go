package faults

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// A restart of the shared PostgreSQL server cuts every session of every
// package's tests, and go test runs packages in parallel: it runs only in
// the long profile, which is run alone (go test ./faults/ -faults.long).
func TestPostgresRestart(t *testing.T) {
	if currentProfile().Name != "long" {
		t.Skip("long profile only (-faults.long or ONCE_FAULTS_LONG=1): restarts the shared PostgreSQL")
	}
	versions, err := os.ReadDir("/etc/postgresql")
	if err != nil || len(versions) == 0 {
		t.Skipf("no local PostgreSQL cluster to restart: %v", err)
	}
	restart := func(ctx context.Context, e *env) {
		sleepCtx(ctx, 1500*time.Millisecond)
		if ctx.Err() != nil {
			return
		}
		out, err := exec.Command("pg_ctlcluster", "--skip-systemctl-redirect", versions[0].Name(), "main", "restart").CombinedOutput()
		if err != nil {
			e.c.t.Errorf("pg_ctlcluster restart: %v: %s", err, strings.TrimSpace(string(out)))
			return
		}
		e.c.inject("PostgreSQL restart")
	}
	for _, mode := range []string{modeFenced, modeTx} {
		t.Run(mode, func(t *testing.T) {
			runScenario(t, scenario{Name: "PostgreSQL restart", Backend: "postgres", Mode: mode, Chaos: restart})
		})
	}
}
