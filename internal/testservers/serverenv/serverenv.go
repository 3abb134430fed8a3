// Package serverenv is the one place that says where the test servers are:
// the environment variables every test, benchmark and example of the
// repository reads, and their local defaults. It has no dependencies, so
// that programs (bench, the examples) can use it without importing
// package testing; tests use package testservers, which builds on it.
//
//	ONCE_POSTGRES_URL          PostgreSQL URL (DefaultPostgresURL)
//	ONCE_REDIS_ADDR            Redis single node (DefaultRedisAddr)
//	ONCE_REDIS_CLUSTER_ADDRS   Redis Cluster seeds, comma-separated (127.0.0.1:7001…7006)
//	ONCE_REDIS_SENTINEL_ADDRS  Redis Sentinels, comma-separated (127.0.0.1:26391), primary SentinelMaster
//	ONCE_MYSQL_DSN             MariaDB/MySQL data source name, go-sql-driver form (DefaultMySQLDSN)
//	ONCE_REQUIRE_SERVERS=1, CI a missing server fails a test instead of skipping it
package serverenv

import (
	"os"
	"strings"
)

// Defaults when the environment names no server.
const (
	DefaultPostgresURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	DefaultRedisAddr   = "127.0.0.1:6379"
	// DefaultMySQLDSN is the local MariaDB's root user (no password),
	// database test, as scripts/services.sh exports it.
	DefaultMySQLDSN = "root@tcp(127.0.0.1:3306)/test"
	// SentinelMaster is the primary's name that scripts/redis-sentinel.sh
	// registers with its Sentinels.
	SentinelMaster = "oncemaster"
)

// DefaultRedisClusterAddrs are the seeds scripts/redis-cluster.sh starts.
var DefaultRedisClusterAddrs = []string{
	"127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003",
	"127.0.0.1:7004", "127.0.0.1:7005", "127.0.0.1:7006",
}

// DefaultRedisSentinelAddrs are the Sentinels scripts/redis-sentinel.sh
// starts.
var DefaultRedisSentinelAddrs = []string{"127.0.0.1:26391"}

// PostgresURL is ONCE_POSTGRES_URL or DefaultPostgresURL.
func PostgresURL() string { return env("ONCE_POSTGRES_URL", DefaultPostgresURL) }

// RedisAddr is ONCE_REDIS_ADDR or DefaultRedisAddr.
func RedisAddr() string { return env("ONCE_REDIS_ADDR", DefaultRedisAddr) }

// MySQLDSN is ONCE_MYSQL_DSN or DefaultMySQLDSN.
func MySQLDSN() string { return env("ONCE_MYSQL_DSN", DefaultMySQLDSN) }

// RedisClusterAddrs is ONCE_REDIS_CLUSTER_ADDRS or DefaultRedisClusterAddrs.
func RedisClusterAddrs() []string { return list("ONCE_REDIS_CLUSTER_ADDRS", DefaultRedisClusterAddrs) }

// RedisSentinelAddrs is ONCE_REDIS_SENTINEL_ADDRS or
// DefaultRedisSentinelAddrs.
func RedisSentinelAddrs() []string {
	return list("ONCE_REDIS_SENTINEL_ADDRS", DefaultRedisSentinelAddrs)
}

// Required reports whether a missing server must fail a test rather than
// skip it: ONCE_REQUIRE_SERVERS=1, or CI set (in CI a missing server is a
// failure).
func Required() bool {
	return os.Getenv("ONCE_REQUIRE_SERVERS") == "1" || os.Getenv("CI") != ""
}

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func list(name string, def []string) []string {
	if v := os.Getenv(name); v != "" {
		return strings.Split(v, ",")
	}
	return append([]string(nil), def...)
}
