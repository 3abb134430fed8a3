package main

import (
	"errors"
	"fmt"

	"github.com/stagedoor/once/backends/postgres"
	"github.com/stagedoor/once/backends/redisstore"
)

type checkCmd struct{}

// checkResult is what check prints, on success and on a finding.
type checkResult struct {
	Store string `json:"store"` // "postgres", "mysql", "sqlite" or "redis"
	OK    bool   `json:"ok"`
	// The SQL stores (Version and LatestVersion: PostgreSQL's).
	Table         string `json:"table,omitempty"`
	Version       *int   `json:"migration_version,omitempty"`
	LatestVersion int    `json:"latest_version,omitempty"`
	// Redis.
	EvictionPolicy string `json:"eviction_policy,omitempty"`
	// Problem says what is wrong and what to do, when OK is false.
	Problem string `json:"problem,omitempty"`
}

var errCheckFailed = errors.New("check failed")

func (ch *checkCmd) Run(e *env) error {
	k, err := e.cli.selectBackend()
	if err != nil {
		return err
	}
	_, c, done, err := e.connect(k)
	if err != nil {
		return err
	}
	defer done()
	var res checkResult
	switch k {
	case kindRedis:
		res, err = checkRedis(e, c)
	case kindPostgres:
		res, err = checkPostgres(e, c)
	default:
		res, err = checkSQL(e, c, k)
	}
	if err != nil {
		return err
	}
	text := res.Problem
	if res.OK {
		text = res.summary()
	}
	if err := e.emit(res, text); err != nil {
		return err
	}
	if !res.OK {
		return errCheckFailed
	}
	return nil
}

func (r checkResult) summary() string {
	switch r.Store {
	case "redis":
		return "redis: reachable; maxmemory-policy is noeviction on every primary"
	case "mysql", "sqlite":
		return fmt.Sprintf("%s: reachable; %s readable", r.Store, quoteText(r.Table))
	}
	return fmt.Sprintf("postgres: reachable; %s at migration version %d (latest %d)", quoteText(r.Table), *r.Version, r.LatestVersion)
}

// checkRedis reads maxmemory-policy on the server or every Cluster
// primary: anything but noeviction lets Redis evict records.
func checkRedis(e *env, c *conn) (checkResult, error) {
	ctx, cancel := e.bounded()
	defer cancel()
	res := checkResult{Store: "redis", OK: true, EvictionPolicy: "noeviction"}
	err := c.rs.CheckEvictionPolicy(ctx)
	var pe *redisstore.EvictionPolicyError
	if errors.As(err, &pe) {
		res.OK, res.EvictionPolicy = false, pe.Policy
		res.Problem = evictionProblem(pe)
		return res, nil
	}
	return res, err
}

// evictionProblem is check's finding for pe. The address comes from the
// server (a Cluster's topology) or the user, the policy from the server:
// both are quoted, so neither can forge an output line.
func evictionProblem(pe *redisstore.EvictionPolicyError) string {
	return fmt.Sprintf("redis %s has maxmemory-policy %q: records can be evicted under memory pressure, and an evicted key runs again; set it to noeviction", quoteText(pe.Addr), pe.Policy)
}

// checkSQL reads a probe key of a MariaDB/MySQL or SQLite store: the
// server (or file) answers and the table exists.
func checkSQL(e *env, c *conn, k kind) (checkResult, error) {
	ctx, cancel := e.bounded()
	defer cancel()
	res := checkResult{Store: "mysql", OK: true, Table: e.cli.tableName(k)}
	if k == kindSQLite {
		res.Store = "sqlite"
	}
	if _, err := c.admin.Get(ctx, "once-cli", "check"); err != nil {
		res.OK = false
		res.Problem = fmt.Sprintf("%s: %s cannot be read (%v); run once migrate if it does not exist", res.Store, quoteText(res.Table), err)
	}
	return res, nil
}

// checkPostgres reads a probe key (connectivity, and the table exists) and
// the migration version.
func checkPostgres(e *env, c *conn) (checkResult, error) {
	ctx, cancel := e.bounded()
	defer cancel()
	res := checkResult{Store: "postgres", OK: true, Table: pgTable(e.cli), LatestVersion: latestMigration(postgres.Migrations())}
	_, err := c.pg.Get(ctx, "once-cli", "check")
	var pe *postgres.Error
	if errors.As(err, &pe) && pe.Code == postgres.CodeUndefinedTable {
		res.OK = false
		res.Problem = fmt.Sprintf("postgres: reachable, but table %s does not exist; run once migrate", quoteText(res.Table))
	} else if err != nil {
		return res, err
	}
	v, err := migrationVersion(ctx, c.pool, e.cli)
	if err != nil {
		return res, err
	}
	res.Version = &v
	if res.OK && v < res.LatestVersion {
		res.OK = false
		res.Problem = fmt.Sprintf("postgres: %s is at migration version %d, latest is %d; run once migrate", quoteText(res.Table), v, res.LatestVersion)
	}
	return res, nil
}
