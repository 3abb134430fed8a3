package faults

import (
	"flag"
	"fmt"
	"os"
	"testing"
	"time"
)

var (
	flagLong    = flag.Bool("faults.long", false, "run the long (release) profile: more keys and processes, a PostgreSQL restart")
	flagResults = flag.Bool("faults.write-results", false, "write the summary of this run to RESULTS.md")
	// TestSteps's size: small by default, so that the suite's CI run
	// stays short; RESULTS.md's figures come from a larger run.
	flagStepsKeys  = flag.Int("faults.steps-keys", 60, "keys per store of TestSteps")
	flagStepsKills = flag.Int("faults.steps-kills", 1, "SIGKILLs per step boundary and store in TestSteps")
)

// workerEnv marks a re-executed test binary as a worker process.
const workerEnv = "ONCE_FAULT_WORKER"

func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) == "1" {
		os.Exit(workerMain())
	}
	flag.Parse()
	if testing.Short() {
		fmt.Fprintln(os.Stderr, "faults: -short skips the fault suite (the full loop runs it)")
		os.Exit(0)
	}
	start := time.Now()
	code := m.Run()
	if err := summary.finish(code, time.Since(start)); err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// profile sizes a run.
type profile struct {
	Name    string
	Keys    int
	Workers int
	// Lease is the workers' lease: short, so that takeovers happen within
	// the run.
	Lease time.Duration
	// Slack is added to the lease before a key must be claimable again.
	Slack time.Duration
	// Deadline bounds a worker process.
	Deadline time.Duration
}

func currentProfile() profile {
	if *flagLong || os.Getenv("ONCE_FAULTS_LONG") == "1" {
		return profile{Name: "long", Keys: 2000, Workers: 8, Lease: 2 * time.Second, Slack: time.Second, Deadline: 5 * time.Minute}
	}
	return profile{Name: "default", Keys: 200, Workers: 4, Lease: time.Second, Slack: 750 * time.Millisecond, Deadline: 90 * time.Second}
}
