package redisstore

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
)

func TestParseVersion(t *testing.T) {
	for _, tc := range []struct {
		in                  string
		major, minor, patch int
		ok                  bool
	}{
		{"7.0.0", 7, 0, 0, true},
		{"7.0.15", 7, 0, 15, true},
		{"7.2.4", 7, 2, 4, true},
		{"6.2.14", 6, 2, 14, true},
		{"8.0.2", 8, 0, 2, true},
		{"255.255.255", 255, 255, 255, true}, // an unstable build
		{"7.2", 7, 2, 0, true},
		{"7", 7, 0, 0, true},
		{"7.0.0-rc1", 7, 0, 0, true},
		{"7.2.4-valkey", 7, 2, 4, true},
		{"6.0-rc3", 6, 0, 0, true},
		{"7.0.0 (00000000)", 7, 0, 0, true},
		{"007.001.002", 7, 1, 2, true},
		{"999999999.0.0", 999999999, 0, 0, true},
		// Garbage.
		{"", 0, 0, 0, false},
		{" ", 0, 0, 0, false},
		{"abc", 0, 0, 0, false},
		{"v7.2.4", 0, 0, 0, false},
		{"-7.0.0", 0, 0, 0, false},
		{"+7", 0, 0, 0, false},
		{".7", 0, 0, 0, false},
		{"7.", 0, 0, 0, false},
		{"7..2", 0, 0, 0, false},
		{"7.x", 0, 0, 0, false},
		{"7.2.", 0, 0, 0, false},
		{"7.2.4.5", 0, 0, 0, false},
		{"7.2.4.", 0, 0, 0, false},
		{"1234567890.0.0", 0, 0, 0, false},
		{"7.99999999999999999999", 0, 0, 0, false},
		{"\x00", 0, 0, 0, false},
		{"٧.٠.٠", 0, 0, 0, false}, // Arabic-Indic digits
	} {
		major, minor, patch, ok := parseVersion(tc.in)
		assert.Equal(t, tc.ok, ok, "%q", tc.in)
		if tc.ok {
			assert.Equal(t, [3]int{tc.major, tc.minor, tc.patch}, [3]int{major, minor, patch}, "%q", tc.in)
		}
	}
}

// info builds an INFO server reply with CRLF line ends, as Redis sends.
func info(lines ...string) string {
	return "# Server\r\n" + strings.Join(lines, "\r\n") + "\r\n"
}

func TestVersionCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		info string
		old  *ServerVersionError // want this error
	}{
		{name: "redis 7.0", info: info("redis_version:7.0.15", "redis_git_sha1:00000000", "redis_mode:standalone")},
		{name: "redis 7.2", info: info("redis_version:7.2.4")},
		{name: "redis 8", info: info("redis_version:8.0.2")},
		{name: "LF line ends and spaces", info: "# Server\nredis_version: 7.0.0 \n"},
		{name: "valkey 8", info: info("redis_version:7.2.4", "server_name:valkey", "valkey_version:8.0.1")},
		{name: "valkey without redis_version", info: info("server_name:valkey", "valkey_version:8.1.0")},
		{name: "no version field", info: info("redis_mode:standalone")},
		{name: "empty reply", info: ""},
		{name: "redis 6.2", info: info("redis_version:6.2.14"),
			old: &ServerVersionError{Addr: "a:1", Server: "redis", Version: "6.2.14"}},
		{name: "redis 5", info: info("redis_version:5.0.7"),
			old: &ServerVersionError{Addr: "a:1", Server: "redis", Version: "5.0.7"}},
		{name: "a release candidate of 6.2", info: info("redis_version:6.2.0-rc2"),
			old: &ServerVersionError{Addr: "a:1", Server: "redis", Version: "6.2.0-rc2"}},
		{name: "keydb", info: info("redis_version:6.3.4", "server_name:keydb"),
			old: &ServerVersionError{Addr: "a:1", Server: "keydb", Version: "6.3.4"}},
		{name: "redis_version decides over valkey_version", info: info("redis_version:6.2.0", "valkey_version:8.0.0"),
			old: &ServerVersionError{Addr: "a:1", Server: "redis", Version: "6.2.0"}},
		// A version it cannot read is not checked, as one not reported.
		{name: "garbage version", info: info("redis_version:banana")},
		{name: "empty version", info: info("redis_version:")},
		{name: "four numbers", info: info("redis_version:7.2.4.5")},
		{name: "garbage valkey_version", info: info("valkey_version:8.x")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := versionCheck(server{addr: "a:1"}, tc.info)
			switch {
			case tc.old != nil:
				var e *ServerVersionError
				require.ErrorAs(t, err, &e)
				assert.Equal(t, tc.old, e)
				assert.Contains(t, err.Error(), tc.old.Version, "the message names the version found")
				assert.Contains(t, err.Error(), "7.0 or later")
			default:
				assert.NoError(t, err)
			}
		})
	}
}

// fakeInfo answers INFO from reply and records the sections of each
// call; it serves readInfo's decisions on replies no local server gives
// (an older server's, LOADING's). Every other method is nil.
type fakeInfo struct {
	redis.Cmdable
	reply func(sections []string) (string, error)
	calls [][]string
}

func (f *fakeInfo) Info(_ context.Context, sections ...string) *redis.StringCmd {
	f.calls = append(f.calls, sections)
	return redis.NewStringResult(f.reply(sections))
}

// TestReadInfo: which replies to INFO skip the checks (hidden), which
// fail New and with what, and the second INFO an older server's syntax
// error gets.
func TestReadInfo(t *testing.T) {
	ctx := context.Background()
	sections := []string{"server", "cluster", "memory"}
	for _, tc := range []struct {
		name   string
		reply  error // the error reply to INFO with sections
		hidden bool
		kind   error // New's error, or nil
	}{
		{name: "INFO renamed", reply: redisError("ERR unknown command 'INFO', with args beginning with: 'server'"), hidden: true},
		{name: "INFO not allowed", reply: redisError("NOPERM User u has no permissions to run the 'info' command"), hidden: true},
		{name: "another error reply", reply: redisError("ERR this proxy does not support INFO"), hidden: true},
		{name: "no credentials", reply: redisError("NOAUTH Authentication required."), kind: ErrServer},
		{name: "wrong credentials", reply: redisError("WRONGPASS invalid username-password pair or user is disabled."), kind: ErrServer},
		{name: "loading", reply: redisError("LOADING Redis is loading the dataset in memory"), kind: ErrUnavailable},
		{name: "busy", reply: redisError("BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."), kind: ErrUnavailable},
		{name: "unreachable", reply: errors.New("dial tcp: connection refused"), kind: ErrUnavailable},
		{name: "closed client", reply: redis.ErrClosed, kind: backends.ErrClosed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeInfo{reply: func([]string) (string, error) { return "", tc.reply }}
			_, hidden, err := readInfo(ctx, f, sections)
			assert.Equal(t, [][]string{sections}, f.calls, "one INFO")
			if tc.kind != nil {
				require.ErrorIs(t, err, tc.kind)
				var e *Error
				require.ErrorAs(t, err, &e)
				assert.Equal(t, "version check", e.Op)
				assert.Nil(t, hidden)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.hidden, hidden != nil)
		})
	}

	t.Run("cancelled", func(t *testing.T) {
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		f := &fakeInfo{reply: func([]string) (string, error) { return "", context.Canceled }}
		_, _, err := readInfo(cancelled, f, sections)
		require.ErrorIs(t, err, context.Canceled)
	})

	// Redis before 7.0 takes one section and answers several with a syntax
	// error: the second INFO, without sections, reads its version.
	t.Run("older server", func(t *testing.T) {
		f := &fakeInfo{reply: func(s []string) (string, error) {
			if len(s) > 1 {
				return "", redisError("ERR syntax error")
			}
			return info("redis_version:6.2.14", "# Cluster", "cluster_enabled:0"), nil
		}}
		got, hidden, err := readInfo(ctx, f, sections)
		require.NoError(t, err)
		require.Nil(t, hidden)
		assert.Equal(t, [][]string{sections, nil}, f.calls)
		var old *ServerVersionError
		require.ErrorAs(t, versionCheck(server{addr: "a:1"}, got), &old)
		assert.Equal(t, "6.2.14", old.Version)
	})
	t.Run("one section", func(t *testing.T) {
		f := &fakeInfo{reply: func([]string) (string, error) { return "", redisError("ERR syntax error") }}
		_, hidden, err := readInfo(ctx, f, []string{"memory"})
		require.NoError(t, err)
		assert.NotNil(t, hidden, "a syntax error to one section is an INFO that does not answer")
		assert.Len(t, f.calls, 1)
	})
}

// replyError is an error reply of the server, as go-redis reports one
// (a value implementing redis.Error).
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

var _ redis.Error = replyError("")

func redisError(msg string) error { return replyError(msg) }

// TestServerVersionErrorText: the message names the server and its
// address when known, and reads without a gap when the address is not
// (a client that is not a *redis.Client or *redis.ClusterClient).
func TestServerVersionErrorText(t *testing.T) {
	e := &ServerVersionError{Addr: "a:1", Server: "redis", Version: "6.2.14"}
	assert.Equal(t, "once/redisstore: redis at a:1 reports version 6.2.14; the store needs Redis 7.0 or later (SET with NX and GET, SPUBLISH)", e.Error())
	e.Addr = ""
	assert.Equal(t, "once/redisstore: redis reports version 6.2.14; the store needs Redis 7.0 or later (SET with NX and GET, SPUBLISH)", e.Error())
	e.via = "the Sentinel primary"
	assert.Equal(t, "once/redisstore: redis (the Sentinel primary) reports version 6.2.14; the store needs Redis 7.0 or later (SET with NX and GET, SPUBLISH)", e.Error())
}

// TestNewErrorTransient: LOADING and BUSY, to INFO or to SCRIPT LOAD (a
// server loading its data set answers INFO but not SCRIPT LOAD), are
// ErrUnavailable; other replies stay ErrServer.
func TestNewErrorTransient(t *testing.T) {
	ctx := context.Background()
	for reply, kind := range map[string]error{
		"LOADING Redis is loading the dataset in memory":         ErrUnavailable,
		"BUSY Redis is busy running a script.":                   ErrUnavailable,
		"NOAUTH Authentication required.":                        ErrServer,
		"ERR unknown command 'SCRIPT', with args beginning with": ErrServer,
	} {
		err := newError(ctx, "new", redisError(reply))
		require.ErrorIs(t, err, kind, reply)
		var e *Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, "new", e.Op)
		assert.Equal(t, reply, e.Detail)
	}
	require.ErrorIs(t, newError(ctx, "new", errors.New("dial tcp: refused")), ErrUnavailable)
}
