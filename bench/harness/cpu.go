package harness

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// CPUReading is where the CPU time of this process and of the whole
// machine stood at one moment: a cell's difference of two says how much
// CPU its operations cost here (the library or baseline, the driver and
// the runtime) and elsewhere (the server and everything else running).
type CPUReading struct {
	self    time.Duration // this process, user + system (getrusage)
	machine time.Duration // every CPU, busy time (/proc/stat)
	ok      bool          // false where /proc/stat cannot be read
}

func ReadCPU() CPUReading {
	var r CPUReading
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		r.self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	r.machine, r.ok = machineBusy()
	return r
}

// clockTicks is USER_HZ, the unit of /proc/stat: 100 on every Linux
// architecture Go supports.
const clockTicks = 100

// machineBusy sums the busy fields of /proc/stat's first line (user, nice,
// system, irq, softirq, steal; not idle or iowait).
func machineBusy() (time.Duration, bool) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return 0, false
	}
	fields := strings.Fields(sc.Text())
	if len(fields) < 9 || fields[0] != "cpu" {
		return 0, false
	}
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		n, err := strconv.ParseInt(fields[i], 10, 64)
		if err != nil {
			return 0, false
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, true
}

// CPUSpent is the CPU one cell cost: here, in this process; elsewhere, on
// the rest of the machine (the server, on a machine where nothing else
// runs). other is meaningful only when ok.
type CPUSpent struct {
	Here, Other time.Duration
	OK          bool
}

// other may be negative in one cell (the machine's busy time counts in
// 10 ms steps, this process's in microseconds): cells are summed first, and
// only the sum is clamped (cpuPerOp), so that the rounding does not bias
// the total.
func SpentBetween(a, b CPUReading) CPUSpent {
	here := b.self - a.self
	return CPUSpent{Here: here, Other: b.machine - a.machine - here, OK: a.ok && b.ok}
}
