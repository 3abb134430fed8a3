//go:build race

package once_test

const raceEnabled = true
