// Package goroutines finds the goroutines running a package's code, for
// tests that check that a Close leaves none behind. The core module does
// not depend on goleak, and a package's internal tests cannot import
// internal/testservers (which imports the stores), so this package
// imports nothing of the module.
package goroutines

import (
	"regexp"
	"runtime"
	"strings"
)

// Matching returns the stacks, by goroutine id, of the goroutines with a
// frame that frame matches (a regexp over runtime.Stack's text, e.g.
// `(?m)^example\.com/pkg\.\(\*session\)\.`).
func Matching(frame *regexp.Regexp) map[string]string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	found := map[string]string{}
	for _, g := range strings.Split(string(buf), "\n\n") {
		id, _, _ := strings.Cut(strings.TrimPrefix(g, "goroutine "), " ")
		if frame.MatchString(g) {
			found[id] = g
		}
	}
	return found
}

// Since returns the stacks of Matching(frame) whose goroutine is not in
// before (a Matching taken earlier): those started since, while the
// goroutines other tests left behind are ignored.
func Since(before map[string]string, frame *regexp.Regexp) []string {
	var added []string
	for id, g := range Matching(frame) {
		if _, ok := before[id]; !ok {
			added = append(added, g)
		}
	}
	return added
}
