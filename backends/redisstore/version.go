package redisstore

import (
	"fmt"
	"strconv"
	"strings"
)

// The oldest server the store works with: Claim sends SET with both NX and
// GET (7.0; GET alone is 6.2's), and a Cluster's notifications use
// SPUBLISH and SSUBSCRIBE (7.0). The scripts need nothing newer (KEEPTTL
// is 6.0's).
const (
	minMajor = 7
	minMinor = 0
)

// ServerVersionError reports a server older than Redis 7.0, which New
// refuses: the store's commands would fail on it (SET with NX and GET
// together is an error reply before 7.0).
type ServerVersionError struct {
	// Addr is the server's address, when known.
	Addr string
	// Server is what the server calls itself (INFO server's server_name,
	// for example "valkey"), or "redis".
	Server string
	// Version is the version it reports (redis_version, or valkey_version
	// when it reports no redis_version).
	Version string

	via string // names the server when Addr is unknown
}

// Error implements error.
func (e *ServerVersionError) Error() string {
	return fmt.Sprintf("once/redisstore: %s reports version %s; the store needs Redis %d.%d or later (SET with NX and GET, SPUBLISH)",
		describe(e.Server, e.Addr, e.via), e.Version, minMajor, minMinor)
}

// versionCheck decides on the reply to INFO server: nil for Redis 7.0 or
// later, or for a server that does not say (an INFO without a version
// field): the store then finds out at its first Claim, whose SET fails
// with ErrServer. A version it cannot read ("7.2.4.5", "unknown") is not
// checked either: forks and proxies spell versions their own way, and
// refusing a server that may work is worse than that first Claim's
// error. Otherwise a *ServerVersionError for an older server. (readInfo
// decides on an error reply to INFO.)
//
// redis_version decides; a server that reports none but valkey_version
// (every Valkey release has Redis 7.2's commands) is judged by that.
func versionCheck(sv server, info string) error {
	field := "redis_version"
	v, ok := infoField(info, field)
	if !ok {
		field = "valkey_version"
		if v, ok = infoField(info, field); !ok {
			return nil // the server does not say
		}
	}
	major, minor, _, ok := parseVersion(v)
	if !ok {
		return nil // a version it cannot read: not checked (see above)
	}
	if major > minMajor || major == minMajor && minor >= minMinor {
		return nil
	}
	name, ok := infoField(info, "server_name")
	if !ok || name == "" {
		name = "redis"
	}
	return &ServerVersionError{Addr: sv.addr, Server: name, Version: v, via: sv.via}
}

// parseVersion reads "major[.minor[.patch]]", optionally followed by a
// suffix that starts with neither a digit nor a dot ("7.2.4-rc1",
// "7.0.0 (build)"). Each number is at most 9 digits.
func parseVersion(v string) (major, minor, patch int, ok bool) {
	var nums [3]int
	n := 0
	rest := v
	for n < len(nums) {
		i := 0
		for i < len(rest) && i < 10 && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if i == 0 || i > 9 {
			return 0, 0, 0, false
		}
		nums[n], _ = strconv.Atoi(rest[:i]) // at most 9 digits: cannot fail
		n++
		rest = rest[i:]
		if !strings.HasPrefix(rest, ".") || n == len(nums) {
			break
		}
		rest = rest[1:]
	}
	if rest != "" && (rest[0] == '.' || rest[0] >= '0' && rest[0] <= '9') {
		return 0, 0, 0, false
	}
	return nums[0], nums[1], nums[2], true
}
