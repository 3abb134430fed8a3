// Package testparallel lets a test package whose parallel tests spend
// their time waiting (on a store's clock, a lease, a hold, a demo's own
// timeouts) rather than computing run more of them at once than the go
// command's default of one per CPU (-parallel, GOMAXPROCS). It has no
// dependencies, so that any module of the repository can use it.
package testparallel

import (
	"flag"
	"strconv"
)

// Default makes n the package's -test.parallel unless the command line
// gives one, which is kept. Call it from TestMain, before m.Run; it parses
// the command line if nothing has yet.
func Default(n int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		_ = flag.Set("test.parallel", strconv.Itoa(n))
	}
}
