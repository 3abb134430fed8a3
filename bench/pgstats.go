package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stagedoor/once/internal/pgsql"
)

// statsSettle is how long the benchmark waits for the pool's sessions to
// report their table statistics: an idle PostgreSQL backend flushes them
// at most once a second.
const statsSettle = 2 * time.Second

// pgStats gathers what PostgreSQL says about each target's table: the HOT
// share of the updates made by the measured first executions
// (pg_stat_user_tables), and, per operation, the WAL and server time of
// each target's statements (EXPLAIN (ANALYZE, WAL)).
type pgStats struct {
	run    *pgRun
	tables map[string]string // label → quoted table
	before map[string]tupleStats
	during map[string]tupleStats
}

type tupleStats struct{ ins, upd, hot int64 }

func readTupleStats(ctx context.Context, pool *pgxpool.Pool, table string) (tupleStats, error) {
	var s tupleStats
	err := pool.QueryRow(ctx, `SELECT n_tup_ins, n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relid = $1::regclass`, table).
		Scan(&s.ins, &s.upd, &s.hot)
	return s, err
}

func (p *pgStats) snapshot(ctx context.Context) (map[string]tupleStats, error) {
	select {
	case <-time.After(statsSettle):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	m := map[string]tupleStats{}
	for label, table := range p.tables {
		s, err := readTupleStats(ctx, p.run.pool, table)
		if err != nil {
			return nil, err
		}
		m[label] = s
	}
	return m, nil
}

// begin and end bracket every first-execution cell of the run.
func (p *pgStats) begin(ctx context.Context) (err error) {
	p.before, err = p.snapshot(ctx)
	return err
}

func (p *pgStats) end(ctx context.Context) error {
	after, err := p.snapshot(ctx)
	if err != nil {
		return err
	}
	p.during = map[string]tupleStats{}
	for label, a := range after {
		b := p.before[label]
		p.during[label] = tupleStats{ins: a.ins - b.ins, upd: a.upd - b.upd, hot: a.hot - b.hot}
	}
	return nil
}

// explained is what EXPLAIN (ANALYZE, WAL, FORMAT JSON) reports about one
// execution. The top plan node's WAL counters include every part of the
// statement (each CTE of the library's statements is read by the main
// query); the commit record, written after the statement, is not counted,
// for either target.
type explained struct {
	Plan struct {
		WALRecords int64 `json:"WAL Records"`
		WALFPI     int64 `json:"WAL FPI"`
		WALBytes   int64 `json:"WAL Bytes"`
	} `json:"Plan"`
	PlanningMS  float64 `json:"Planning Time"`
	ExecutionMS float64 `json:"Execution Time"`
}

type profile struct {
	ops                      int
	statements               int
	walBytes, walRec, walFPI int64
	execMS, planMS           float64
	cpuOps                   int
	cpuNS                    int64 // server CPU of cpuOps plain runs, from schedstat
}

func (p *profile) add(e explained) {
	p.statements++
	p.walBytes += e.Plan.WALBytes
	p.walRec += e.Plan.WALRecords
	p.walFPI += e.Plan.WALFPI
	p.execMS += e.ExecutionMS
	p.planMS += e.PlanningMS
}

func explain(ctx context.Context, conn *pgxpool.Conn, sql string, args ...any) (explained, error) {
	var raw []byte
	if err := conn.QueryRow(ctx, "EXPLAIN (ANALYZE, WAL, TIMING OFF, FORMAT JSON) "+sql, args...).Scan(&raw); err != nil {
		return explained{}, err
	}
	var out []explained
	if err := json.Unmarshal(raw, &out); err != nil || len(out) != 1 {
		return explained{}, fmt.Errorf("explain output %q: %v", raw, err)
	}
	return out[0], nil
}

// profileOps is how many first executions and replays each target's
// statements are profiled over.
var profileOps = 300

// profileStatements runs profileOps first executions and replays of the
// library's statements and of the seed baseline's, each statement under
// EXPLAIN (ANALYZE, WAL), on one connection. The library's are those of
// the order that suits each: a first execution's insert_claim.sql (insert
// first, as while most recent claims met new keys) and complete.sql, a
// replay's read_claim.sql (read first, as while most met a row).
func (p *pgStats) profileStatements(ctx context.Context) (map[string]*profile, error) {
	conn, err := p.run.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	lib := pgsql.Render(p.tables["library"])
	seed := strings.NewReplacer("{seed}", p.tables["raw"])
	seedInsert, seedComplete, seedFetch := seed.Replace(pgsql.SeedInsert), seed.Replace(pgsql.SeedComplete), seed.Replace(pgsql.SeedFetch)
	read := lib.ReadClaim
	out := map[string]*profile{}
	get := func(k string) *profile {
		if out[k] == nil {
			out[k] = &profile{}
		}
		return out[k]
	}
	leaseUS, retentionUS := lease.Microseconds(), retention.Microseconds()
	scope := "profile-" + runID()
	var keys keySeq
	run := func(name, sql string, args ...any) error {
		e, err := explain(ctx, conn, sql, args...)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		get(name).add(e)
		return nil
	}
	for range profileOps {
		key, owner := keys.Next(""), token()
		if err := run("library first execution", lib.InsertClaim, scope, key, fpA, owner, leaseUS, retentionUS, "1ms"); err != nil {
			return nil, err
		}
		if err := run("library first execution", lib.Complete, scope, key, owner, storedOutcome, retentionUS, pgsql.Slot(scope, key)); err != nil {
			return nil, err
		}
		if err := run("library replay", read, scope, key, token()); err != nil {
			return nil, err
		}
		if err := run("raw first execution", seedInsert, key, scope, fpA); err != nil {
			return nil, err
		}
		if err := run("raw first execution", seedComplete, key, scope, 200, storedOutcome); err != nil {
			return nil, err
		}
		if err := run("raw replay", seedInsert, key, scope, fpA); err != nil {
			return nil, err
		}
		if err := run("raw replay", seedFetch, key, scope); err != nil {
			return nil, err
		}
		for _, k := range []string{"library first execution", "library replay", "raw first execution", "raw replay"} {
			get(k).ops++
		}
	}
	if err := p.measureCPU(ctx, conn, get, lib, read, seedInsert, seedComplete, seedFetch); err != nil {
		return nil, err
	}
	return out, nil
}

// schedNS reads the CPU time of a process, in nanoseconds, from
// /proc/<pid>/schedstat; ok is false where the server's processes are not
// visible (another host, another container).
func schedNS(pid int32) (ns int64, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(int(pid)) + "/schedstat")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, false
	}
	ns, err = strconv.ParseInt(f[0], 10, 64)
	return ns, err == nil
}

// backendPID returns the process id of conn's serving backend, and whether
// its CPU time can be read here (schedNS).
func backendPID(ctx context.Context, conn *pgxpool.Conn) (pid int32, visible bool, err error) {
	if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		return 0, false, err
	}
	_, visible = schedNS(pid)
	return pid, visible, nil
}

// execOn returns a function that runs one statement on conn, as a prepared
// statement, and discards its rows.
func execOn(ctx context.Context, conn *pgxpool.Conn) func(sql string, args ...any) error {
	return func(sql string, args ...any) error {
		rows, err := conn.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		rows.Close()
		return rows.Err()
	}
}

// measureCPU runs the same operations as profileStatements without EXPLAIN,
// as prepared statements on conn, in interleaved blocks, and charges each
// block the CPU time the serving backend process spent (commit included,
// the WAL writer's fsync not): the server's cost per operation without
// EXPLAIN's instrumentation. It measures nothing when the backend's process
// is not visible from here.
func (p *pgStats) measureCPU(ctx context.Context, conn *pgxpool.Conn, get func(string) *profile, lib pgsql.Statements, read, seedInsert, seedComplete, seedFetch string) error {
	pid, visible, err := backendPID(ctx, conn)
	if err != nil || !visible {
		return err
	}
	exec := execOn(ctx, conn)
	leaseUS, retentionUS := lease.Microseconds(), retention.Microseconds()
	scope := "cpu-" + runID()
	var keys keySeq
	const block = 50
	blocks := max(profileOps/block, 1) * 2
	for range blocks {
		batch := make([]string, block)
		for i := range batch {
			batch[i] = keys.Next("")
		}
		owner := token()
		ops := []struct {
			name string
			run  func(key string) error
		}{
			{"library first execution", func(key string) error {
				if err := exec(lib.InsertClaim, scope, key, fpA, owner, leaseUS, retentionUS, "1ms"); err != nil {
					return err
				}
				return exec(lib.Complete, scope, key, owner, storedOutcome, retentionUS, pgsql.Slot(scope, key))
			}},
			{"library replay", func(key string) error {
				return exec(read, scope, key, "replayer")
			}},
			{"raw first execution", func(key string) error {
				if err := exec(seedInsert, key, scope, fpA); err != nil {
					return err
				}
				return exec(seedComplete, key, scope, 200, storedOutcome)
			}},
			{"raw replay", func(key string) error {
				if err := exec(seedInsert, key, scope, fpA); err != nil {
					return err
				}
				return exec(seedFetch, key, scope)
			}},
		}
		for _, op := range ops {
			before, _ := schedNS(pid)
			for _, key := range batch {
				if err := op.run(key); err != nil {
					return fmt.Errorf("%s: %w", op.name, err)
				}
			}
			after, _ := schedNS(pid)
			pr := get(op.name)
			pr.cpuNS += after - before
			pr.cpuOps += block
		}
	}
	return nil
}

// notes is the PostgreSQL section printed under the table.
func (p *pgStats) notes(ctx context.Context) (string, error) {
	var b strings.Builder
	b.WriteString("PostgreSQL: a Claim sends its insert first while most of its Store's recent claims met new keys, and its read first while most met a row; the library's round trips/op count Store calls (a benchmark cell of first executions runs insert first, one of replays read first, as the same-statements target does).\n\n")
	if p.during != nil {
		fmt.Fprintf(&b, "PostgreSQL updates during the measured first executions (pg_stat_user_tables, read %v after each block):\n\n", statsSettle)
		fmt.Fprintln(&b, "| table of | rows inserted | updates | HOT updates | HOT ratio |")
		fmt.Fprintln(&b, "|---|--:|--:|--:|--:|")
		for _, label := range sortedKeys(p.during) {
			s := p.during[label]
			ratio := 0.0
			if s.upd > 0 {
				ratio = float64(s.hot) / float64(s.upd)
			}
			fmt.Fprintf(&b, "| %s | %d | %d | %d | %.3f |\n", label, s.ins, s.upd, s.hot, ratio)
		}
		b.WriteString("\n")
	}
	prof, err := p.profileStatements(ctx)
	if err != nil {
		return b.String(), err
	}
	fmt.Fprintf(&b, "Per operation, each statement under EXPLAIN (ANALYZE, WAL, TIMING OFF), %d operations interleaved on one connection. WAL excludes the commit record (one per writing statement, for both). The benchmark's statements run as prepared generic plans, so planning is paid once per connection; EXPLAIN re-plans every time, so its planning time is shown apart:\n\n", profileOps)
	fmt.Fprintln(&b, "| statements | statements/op | WAL bytes/op | WAL records/op | full-page images/op | EXPLAIN execution/op | EXPLAIN planning/op | server CPU/op |")
	fmt.Fprintln(&b, "|---|--:|--:|--:|--:|--:|--:|--:|")
	for _, label := range sortedKeys(prof) {
		pr := prof[label]
		n := float64(pr.ops)
		cpu := "–"
		if pr.cpuOps > 0 {
			cpu = fmt.Sprintf("%.1fµs", float64(pr.cpuNS)/float64(pr.cpuOps)/1000)
		}
		fmt.Fprintf(&b, "| %s | %.0f | %.0f | %.2f | %.3f | %.1fµs | %.1fµs | %s |\n", label, float64(pr.statements)/n,
			float64(pr.walBytes)/n, float64(pr.walRec)/n, float64(pr.walFPI)/n, pr.execMS*1000/n, pr.planMS*1000/n, cpu)
	}
	b.WriteString("\nserver CPU/op: CPU time of the serving backend process (/proc/<pid>/schedstat, commit included, the WAL writer's fsync not) over the same operations run as prepared statements without EXPLAIN, in interleaved blocks of 50; EXPLAIN's per-node instrumentation inflates statements with many plan nodes, so this column is the fairer comparison. – where the server's processes are not visible. The library's replay is read_claim.sql alone, a plain SELECT of the answer columns by primary key; its first execution is insert_claim.sql and complete.sql.\n")
	if err := p.split(ctx, &b); err != nil {
		return b.String(), err
	}
	return b.String(), nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// split measures and prints where a first execution's server CPU goes.
func (p *pgStats) split(ctx context.Context, b *strings.Builder) error {
	conn, err := p.run.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	// The split runs without waiting for WAL flushes, on this session only:
	// every row commits twice, and the flushes' cost, a large and noisy
	// part of a first execution's server CPU, would drown differences of a
	// few microseconds. The table's server CPU/op column above includes
	// them.
	if _, err := conn.Exec(ctx, "SET synchronous_commit = off"); err != nil {
		return err
	}
	defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), "RESET synchronous_commit") }()
	rows, per, err := p.measureSplit(ctx, conn)
	if err != nil {
		return err
	}
	writeSplit(b, rows, per)
	return nil
}
