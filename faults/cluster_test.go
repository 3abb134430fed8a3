package faults

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// cluster runs worker processes for one scenario and collects their
// events: the driver's log of acknowledged answers and injected faults.
type cluster struct {
	t    *testing.T
	prof profile
	base workerConfig

	mu       sync.Mutex
	fails    []failpoint // failpoints for the next spawns, in order
	maxSpawn int
	spawned  int
	running  map[int]*exec.Cmd
	stopped  map[int]bool
	armed    map[int]failpoint // failpoints not fired yet, by pid
	acks     []event
	faults   []event
	errKinds map[string]int
	// leaseLost are the "err" events of kind lease_lost: a Do that told
	// its caller the claim's lease was lost (ErrLeaseLost).
	leaseLost []event
	// unrecorded are the "err" events of kind unrecorded: a Do (or one
	// of its steps) that could not record what fn did.
	unrecorded []event
	injected   map[string]int
	lastFault  time.Time
	exits      []string
	wg         sync.WaitGroup
	// who names the workers in the faults injected ("" or "a
	// reconciler").
	who string
	// elapse waits until the store's clock has advanced by d: a stopped
	// worker is resumed past its lease by the store's clock.
	elapse func(d time.Duration)
}

func newCluster(t *testing.T, prof profile, base workerConfig, fails []failpoint, extra int) *cluster {
	return &cluster{
		t: t, prof: prof, base: base, fails: fails,
		maxSpawn: prof.Workers + len(fails) + extra,
		running:  map[int]*exec.Cmd{}, stopped: map[int]bool{}, armed: map[int]failpoint{},
		errKinds: map[string]int{}, injected: map[string]int{},
	}
}

// start spawns the initial workers.
func (c *cluster) start() {
	for range c.prof.Workers {
		c.spawn()
	}
}

// spawn starts one worker with the next failpoint, if any. Callers must not
// hold c.mu.
func (c *cluster) spawn() {
	c.mu.Lock()
	if c.spawned >= c.maxSpawn {
		c.mu.Unlock()
		return
	}
	c.spawned++
	cfg := c.base
	cfg.ID = fmt.Sprintf("w%d", c.spawned)
	if len(c.fails) > 0 {
		cfg.Fail, c.fails = c.fails[0], c.fails[1:]
	}
	c.mu.Unlock()

	b, _ := json.Marshal(cfg)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	// A race-enabled worker would sleep a second at exit
	// (atexit_sleep_ms), for every worker of every scenario.
	cmd.Env = append(os.Environ(), workerEnv+"=1", configEnv+"="+string(b), "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		c.t.Errorf("worker pipe: %v", err)
		return
	}
	if err := cmd.Start(); err != nil {
		c.t.Errorf("worker start: %v", err)
		return
	}
	pid := cmd.Process.Pid
	c.mu.Lock()
	c.running[pid] = cmd
	if cfg.Fail.Point != "" {
		c.armed[pid] = cfg.Fail
	}
	c.mu.Unlock()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var e event
			if json.Unmarshal(sc.Bytes(), &e) == nil {
				c.handle(e, pid)
			}
		}
		err := cmd.Wait()
		c.mu.Lock()
		delete(c.running, pid)
		if fp, ok := c.armed[pid]; ok {
			// Killed at random before its failpoint fired: the next
			// worker gets it.
			c.fails = append([]failpoint{fp}, c.fails...)
			delete(c.armed, pid)
		}
		c.mu.Unlock()
		var exit *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &exit) && exit.Sys().(syscall.WaitStatus).Signaled():
			// Killed: a supervisor starts a replacement.
			c.spawn()
		default:
			c.mu.Lock()
			c.exits = append(c.exits, fmt.Sprintf("%s (pid %d): %v: %s", cfg.ID, pid, err, lastLines(stderr.String(), 5)))
			c.mu.Unlock()
		}
	}()
}

func (c *cluster) handle(e event, pid int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch e.Ev {
	case "ack":
		c.acks = append(c.acks, e)
	case "err":
		c.errKinds[e.Kind]++
		switch e.Kind {
		case "lease_lost":
			c.leaseLost = append(c.leaseLost, e)
		case "unrecorded":
			c.unrecorded = append(c.unrecorded, e)
		}
	case "fault":
		c.faults = append(c.faults, e)
		c.lastFault = time.Now()
		delete(c.armed, pid)
		switch e.Action {
		case actionKill:
			c.injected["kill -9"+c.of()+" at "+e.Point]++
		case actionStop:
			c.injected["SIGSTOP"+c.of()+" past lease at "+e.Point]++
			c.stopped[pid] = true
			go c.wake(pid)
		}
	}
}

// wake resumes a worker that stopped itself once it has been stopped past
// its lease by the store's clock: the stale owner wakes after its lease
// could be taken over. The lease is counted from the moment the process
// is seen stopped, not from its "fault" line: a worker descheduled between
// that line and its SIGSTOP would otherwise get the SIGCONT first, then
// stop for good.
func (c *cluster) wake(pid int) {
	for deadline := time.Now().Add(30 * time.Second); !stoppedState(pid); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			c.t.Errorf("worker %d never stopped after its SIGSTOP", pid)
			break
		}
	}
	c.elapse(c.prof.Lease + c.prof.Slack)
	c.mu.Lock()
	delete(c.stopped, pid)
	c.lastFault = time.Now()
	c.mu.Unlock()
	_ = syscall.Kill(pid, syscall.SIGCONT)
}

// stoppedState reports whether pid is stopped by a signal (state T in
// /proc/PID/stat), or gone.
func stoppedState(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || len(b) <= i+2 || b[i+2] == 'T' || b[i+2] == 'Z'
}

// inject counts a fault the driver made.
func (c *cluster) inject(kind string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.injected[kind]++
	c.lastFault = time.Now()
}

// killRandom sends SIGKILL to a random running, not stopped, worker.
func (c *cluster) killRandom() bool {
	c.mu.Lock()
	var pids []int
	for pid := range c.running {
		if !c.stopped[pid] {
			pids = append(pids, pid)
		}
	}
	c.mu.Unlock()
	if len(pids) == 0 {
		return false
	}
	if syscall.Kill(pids[rand.IntN(len(pids))], syscall.SIGKILL) == nil {
		c.inject("kill -9" + c.of() + " at a random time")
		return true
	}
	return false
}

// of names the workers in a fault's description: "" or " of a
// reconciler".
func (c *cluster) of() string {
	if c.who == "" {
		return ""
	}
	return " of " + c.who
}

// terminate waits until no worker is stopped, then stops further spawns
// and sends SIGTERM to every running worker (a reconciler ends its last
// Pass and exits).
func (c *cluster) terminate() {
	for {
		c.mu.Lock()
		n := len(c.stopped)
		if n == 0 {
			c.maxSpawn = 0
		}
		pids := make([]int, 0, len(c.running))
		for pid := range c.running {
			pids = append(pids, pid)
		}
		c.mu.Unlock()
		if n == 0 {
			for _, pid := range pids {
				_ = syscall.Kill(pid, syscall.SIGTERM)
			}
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// merge adds what the workers of o did to c's log (o is done).
func (c *cluster) merge(o *cluster) {
	o.mu.Lock()
	defer o.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.acks = append(c.acks, o.acks...)
	c.faults = append(c.faults, o.faults...)
	c.leaseLost = append(c.leaseLost, o.leaseLost...)
	c.unrecorded = append(c.unrecorded, o.unrecorded...)
	c.exits = append(c.exits, o.exits...)
	c.spawned += o.spawned
	for k, n := range o.errKinds {
		c.errKinds[k] += n
	}
	for k, n := range o.injected {
		c.injected[k] += n
	}
	if o.lastFault.After(c.lastFault) {
		c.lastFault = o.lastFault
	}
}

// wait waits for every worker, or kills them all at the deadline.
func (c *cluster) wait(deadline time.Duration) {
	done := make(chan struct{})
	go func() { c.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(deadline):
		c.t.Errorf("workers still running after %v; killing them", deadline)
		c.killAll()
		<-done
	}
}

// killAll kills every worker this cluster started (by pid), and stops
// further spawns.
func (c *cluster) killAll() {
	c.mu.Lock()
	c.maxSpawn = 0
	pids := make([]int, 0, len(c.running))
	for pid := range c.running {
		pids = append(pids, pid)
	}
	c.mu.Unlock()
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGCONT)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

func lastLines(s string, n int) string {
	lines := bytes.Split(bytes.TrimSpace([]byte(s)), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte(" | ")))
}
