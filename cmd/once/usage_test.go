package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Usage errors exit with status 2 and a message, before any store is
// contacted (the addresses below are never dialled).
func TestUsageErrors(t *testing.T) {
	pg := []string{"--postgres", "postgres://u@127.0.0.1:1/db"}
	rd := []string{"--redis", "127.0.0.1:1"}
	with := func(base []string, args ...string) []string { return append(append([]string{}, base...), args...) }
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "expected one of"},
		{[]string{"frobnicate"}, "unexpected argument frobnicate"},
		{with(rd, "get", "s"), `expected "<key>"`},
		{with(rd, "get", "s", "k", "extra"), "unexpected argument extra"},
		{with(rd, "get", "", "k"), "invalid scope: empty"},
		{with(rd, "get", strings.Repeat("s", 256), "k"), "invalid scope: longer than 255 bytes"},
		{with(rd, "get", "s", "\xff"), "argument 5 is not valid UTF-8"},
		{with(rd, "get", "s", "a\nb"), "invalid key: contains a control character"},
		{with(rd, "delete", "s", ""), "invalid key: empty"},
		{with(rd, "delete", "s", "k"), "delete needs --yes"},
		{with(rd, "migrate"), "migrate is for the SQL stores"},
		{with(rd, "sweep"), "sweep is for the SQL stores"},
		{with(append(rd, pg...), "get", "s", "k"), "choose one store"},
		{[]string{"--redis", "a", "--redis-cluster", "b", "check"}, "choose one store"},
		{with(pg, "--schema", "bad-name", "get", "s", "k"), `invalid Schema name "bad-name"`},
		{with(pg, "--table", "1t", "migrate"), `invalid Table name "1t"`},
		{with(pg, "sweep", "--batch", "0"), "--batch must be positive"},
		{with(pg, "sweep", "--loop", "soon"), "--loop"},
		{with(pg, "--timeout", "abc", "check"), "--timeout"},
		{with(rd, "resolve", "s", "k"), "exactly one of --value JSON, --error MESSAGE and --status CODE"},
		{with(rd, "resolve", "s", "k", "--value", "1", "--error", "x"), "exactly one of"},
		{with(rd, "resolve", "s", "k", "--value", "{"), "--value is not valid JSON"},
		{with(rd, "resolve", "s", "k", "--value", "1", "--code", "c"), "--code goes with --error"},
		{with(rd, "resolve", "s", "k", "--value", "1", "--fingerprint", "zz"), "invalid fingerprint: not hexadecimal"},
		{with(rd, "resolve", "s", "k", "--value", "1", "--fingerprint", strings.Repeat("ab", 65)), "invalid fingerprint: longer than 64 bytes"},
		{with(rd, "resolve", "s", "k", "--value", "1", "--retention=-1h"), "--retention must be positive"},
		{[]string{"--postgres", "postgres://u:pw@[::1", "get", "s", "k"}, "invalid --postgres URL"},
	} {
		r := runCLI(t, c.args...)
		assert.Equal(t, exitUsage, r.code, "%q\n%s", c.args, r)
		assert.Contains(t, r.stderr, c.want, "%q", c.args)
		assert.Empty(t, r.stdout, "%q", c.args)
	}
}

func TestNoStore(t *testing.T) {
	t.Setenv("ONCE_POSTGRES_URL", "")
	r := runCLI(t, "get", "s", "k")
	assert.Equal(t, exitUsage, r.code, "%s", r)
	assert.Contains(t, r.stderr, "no store")
}

func TestHelp(t *testing.T) {
	r := runCLI(t, "--help")
	assert.Equal(t, exitOK, r.code, "%s", r)
	for _, cmd := range []string{"migrate", "sweep", "get", "delete", "resolve", "check"} {
		assert.Contains(t, r.stdout, cmd)
	}
	r = runCLI(t, "resolve", "--help")
	assert.Equal(t, exitOK, r.code, "%s", r)
	assert.Contains(t, r.stdout, "--fingerprint=HEX")
}
