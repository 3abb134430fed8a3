package adaptertest

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"
)

// WorkerEnv is the environment variable that makes a re-executed test
// binary run as a worker; its value names the worker's role.
const WorkerEnv = "ONCE_ADAPTER_WORKER"

// Fleet runs worker processes: the test binary re-executed with
// WorkerEnv set, so that its TestMain runs a worker instead of the tests.
type Fleet struct {
	// Workers is how many run at once.
	Workers int
	// Env is added to every worker's environment.
	Env []string
	// KillEvery, when positive, makes the fleet SIGKILL a random worker
	// after a random pause of up to KillEvery, over and over.
	KillEvery time.Duration

	mu      sync.Mutex
	procs   map[int]*exec.Cmd
	byFleet map[int]bool
	started int
	died    int
	killed  int
}

// Stats are what a fleet did.
type Stats struct {
	Started int // worker processes started
	Died    int // workers that ended on their own (a worker's own SIGKILL counts)
	Killed  int // workers the fleet killed with SIGKILL while work was left
}

// Run keeps Workers processes alive, restarting each one that dies, until
// done reports true (polled every 20 ms) or timeout passes; then it kills
// the remaining workers and reports. done's false at the timeout fails tb.
func (f *Fleet) Run(tb testing.TB, done func() bool, timeout time.Duration) Stats {
	tb.Helper()
	f.mu.Lock()
	f.procs, f.byFleet = map[int]*exec.Cmd{}, map[int]bool{}
	f.started, f.died, f.killed = 0, 0, 0
	f.mu.Unlock()
	exited := make(chan int, 64)
	for range f.Workers {
		f.start(tb, exited)
	}
	stopKiller := make(chan struct{})
	var killerDone sync.WaitGroup
	if f.KillEvery > 0 {
		killerDone.Add(1)
		go func() {
			defer killerDone.Done()
			for {
				select {
				case <-stopKiller:
					return
				case <-time.After(time.Duration(rand.Int64N(int64(f.KillEvery)))):
					f.killOne()
				}
			}
		}()
	}
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	finished := false
	for !finished && time.Now().Before(deadline) {
		select {
		case pid := <-exited:
			f.mu.Lock()
			delete(f.procs, pid)
			f.mu.Unlock()
			f.start(tb, exited)
		case <-tick.C:
			finished = done()
		}
	}
	close(stopKiller)
	killerDone.Wait()
	f.mu.Lock()
	for pid, cmd := range f.procs {
		f.byFleet[pid] = true
		_ = cmd.Process.Kill()
	}
	live := len(f.procs)
	f.mu.Unlock()
	for ; live > 0; live-- {
		pid := <-exited
		f.mu.Lock()
		delete(f.procs, pid)
		f.mu.Unlock()
	}
	f.mu.Lock()
	stats := Stats{Started: f.started, Died: f.died, Killed: f.killed}
	f.mu.Unlock()
	if !finished {
		tb.Fatalf("workers did not finish within %v: %+v", timeout, stats)
	}
	return stats
}

func (f *Fleet) start(tb testing.TB, exited chan<- int) {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), f.Env...), WorkerEnv+"=1")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start worker: %v", err)
	}
	f.mu.Lock()
	f.procs[cmd.Process.Pid] = cmd
	f.started++
	f.mu.Unlock()
	go func() {
		_ = cmd.Wait()
		f.mu.Lock()
		if !f.byFleet[cmd.Process.Pid] {
			f.died++
		}
		f.mu.Unlock()
		exited <- cmd.Process.Pid
	}()
}

func (f *Fleet) killOne() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for pid, cmd := range f.procs {
		if !f.byFleet[pid] && cmd.Process.Signal(syscall.SIGKILL) == nil {
			f.byFleet[pid] = true
			f.killed++
		}
		return
	}
}

// IsWorker reports whether this process is a re-executed worker.
func IsWorker() bool { return os.Getenv(WorkerEnv) != "" }

// KillSelf ends this process with SIGKILL, as kill -9 would: no deferred
// call, no flush, no goodbye to the broker or the store.
func KillSelf() {
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}
