package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stagedoor/once/internal/pgsql"
)

// The split of a first execution's server CPU: the library's two
// statements beside variants that each drop one thing the library's
// statements do, all on the library's table, and the raw baseline on its
// own. The variants are references the library never sends: a claim that
// is a plain insert cannot answer a replay in the same statement, and a
// completion without the waiter check never wakes a waiter.
const (
	// splitPlainInsert: $1 scope, $2 key, $3 fingerprint, $4 owner, $5
	// lease µs, $6 retention µs. The claim's columns, as a plain INSERT …
	// ON CONFLICT DO NOTHING RETURNING, with no read of an existing row and
	// no lock_timeout.
	splitPlainInsert = `INSERT INTO {table} (scope, key, fingerprint, state, owner, lease_until, expires_at, claimed_at)
VALUES ($1::text, $2::text, $3::bytea, 1, $4::text,
	clock_timestamp() + $5::bigint * interval '1 microsecond',
	clock_timestamp() + greatest($5::bigint, $6::bigint) * interval '1 microsecond',
	clock_timestamp())
ON CONFLICT (scope, key) DO NOTHING RETURNING true`
	// splitPlainUpdate: $1 scope, $2 key, $3 outcome. The completion's
	// columns, unfenced, as the seed's UPDATE.
	splitPlainUpdate = `UPDATE {table} SET state = 2, lease_until = NULL, outcome = $3::bytea
WHERE scope = $1::text AND key = $2::text`
)

// splitInsertFirst: insert_claim.sql's parameters. A claim that answers
// replays in one statement: insert_claim.sql's insert first, and the read
// of the existing row (read_claim.sql's answer columns) only when it
// inserted nothing.
var splitInsertFirst = "WITH ins AS (\n" + pgsql.InsertClaim + `)
SELECT 0::smallint, NULL::bytea, NULL::bytea, false,
	NULL::timestamptz, NULL::timestamptz, NULL::timestamptz, NULL::timestamptz, NULL::timestamptz
FROM ins
UNION ALL
SELECT r.state, r.fingerprint, r.outcome, coalesce(r.owner = $4::text, false),
	r.lease_until, r.expires_at, r.hold_until, clock_timestamp(), r.claimed_at
FROM {table} r
WHERE r.scope = $1::text AND r.key = $2::text AND NOT EXISTS (SELECT 1 FROM ins)`

// splitRow is one line of the split: a claim-like statement, then a
// completion-like one, per key.
type splitRow struct {
	name, what      string
	claim, complete func(key string) error
}

// measureSplit runs each row's statements as prepared statements on conn,
// in interleaved blocks of 50 keys (six times as many blocks as
// measureCPU: the differences are a tenth of the whole), and returns each
// row's server CPU per first execution (the serving backend's, as
// measureCPU), the median over the blocks, in row order.
func (p *pgStats) measureSplit(ctx context.Context, conn *pgxpool.Conn) ([]splitRow, []float64, error) {
	pid, visible, err := backendPID(ctx, conn)
	if err != nil || !visible {
		return nil, nil, err
	}
	exec := execOn(ctx, conn)
	table := p.tables["library"]
	lib := pgsql.Render(table)
	r := strings.NewReplacer("{table}", table)
	plainInsert, plainUpdate := r.Replace(splitPlainInsert), r.Replace(splitPlainUpdate)
	insertFirst, read := r.Replace(splitInsertFirst), lib.ReadClaim
	// The completion without its waiter check: the rendered check is
	// replaced by an expression that only keeps $6 typed.
	noWaiterCheck := strings.Replace(lib.Complete, pgsql.NotifySlot(table, "$6"), "($6::int IS NOT NULL)", 1)
	if noWaiterCheck == lib.Complete {
		return nil, nil, fmt.Errorf("split: the completion's waiter check was not found in complete.sql")
	}
	seed := strings.NewReplacer("{seed}", p.tables["raw"])
	seedInsert, seedComplete := seed.Replace(pgsql.SeedInsert), seed.Replace(pgsql.SeedComplete)
	leaseUS, retentionUS := lease.Microseconds(), retention.Microseconds()
	scope := "split-" + runID()
	owner := token()
	claim := func(key string) error {
		return exec(lib.InsertClaim, scope, key, fpA, owner, leaseUS, retentionUS, "1ms")
	}
	insert := func(key string) error { return exec(plainInsert, scope, key, fpA, owner, leaseUS, retentionUS) }
	complete := func(key string) error {
		return exec(lib.Complete, scope, key, owner, storedOutcome, retentionUS, pgsql.Slot(scope, key))
	}
	rows := []splitRow{
		{"library, insert first", "insert_claim.sql (with its 1ms lock_timeout), complete.sql", claim, complete},
		{"claim as a plain insert", "a plain INSERT … ON CONFLICT DO NOTHING of the claim's columns, complete.sql", insert, complete},
		{"library, read first", "read_claim.sql (no row), insert_claim.sql, complete.sql", func(key string) error {
			if err := exec(read, scope, key, owner); err != nil {
				return err
			}
			return exec(lib.InsertClaim, scope, key, fpA, owner, leaseUS, retentionUS, "5000ms")
		}, complete},
		{"library in a transaction's claim statement", "claim_tx.sql (read and gated insert in one statement, at READ COMMITTED), complete.sql", func(key string) error {
			return exec(lib.ClaimTx, scope, key, fpA, owner, leaseUS, retentionUS, "5000ms")
		}, complete},
		{"claim, insert first, one statement", "the claim's insert, then the read only when it inserted nothing (one statement), complete.sql", func(key string) error {
			return exec(insertFirst, scope, key, fpA, owner, leaseUS, retentionUS, "5000ms")
		}, complete},
		{"claim as insert + read in one pipeline", "the plain insert and a SELECT of the row in one round trip (pgx batch), complete.sql", func(key string) error {
			var b pgx.Batch
			b.Queue(plainInsert, scope, key, fpA, owner, leaseUS, retentionUS)
			b.Queue(read, scope, key, owner)
			return conn.SendBatch(ctx, &b).Close()
		}, complete},
		{"completion without the waiter check", "insert_claim.sql, complete.sql without pg_try_advisory_xact_lock", claim, func(key string) error {
			return exec(noWaiterCheck, scope, key, owner, storedOutcome, retentionUS, pgsql.Slot(scope, key))
		}},
		{"plain statements, library's table", "the plain insert, an unfenced UPDATE", insert, func(key string) error {
			return exec(plainUpdate, scope, key, storedOutcome)
		}},
		{"raw baseline", "the seed's insert and update, its own table", func(key string) error {
			return exec(seedInsert, key, scope, fpA)
		}, func(key string) error {
			return exec(seedComplete, key, scope, 200, storedOutcome)
		}},
	}
	perBlock := make([][]float64, len(rows)) // µs per first execution, one per block
	var keys keySeq
	const block = 50
	blocks := max(profileOps/block, 1) * 6
	for b := range blocks {
		for j := range rows {
			i := (j + b) % len(rows) // rotate the order from block to block
			batch := make([]string, block)
			for k := range batch {
				batch[k] = keys.Next("")
			}
			before, ok := schedNS(pid)
			if !ok {
				return nil, nil, fmt.Errorf("split: the backend's CPU time (pid %d) could not be read", pid)
			}
			for _, key := range batch {
				if err := rows[i].claim(key); err != nil {
					return nil, nil, fmt.Errorf("split %s: %w", rows[i].name, err)
				}
				if err := rows[i].complete(key); err != nil {
					return nil, nil, fmt.Errorf("split %s: %w", rows[i].name, err)
				}
			}
			after, ok := schedNS(pid)
			if !ok {
				return nil, nil, fmt.Errorf("split: the backend's CPU time (pid %d) could not be read", pid)
			}
			perBlock[i] = append(perBlock[i], float64(after-before)/block/1e3)
		}
	}
	per := make([]float64, len(rows))
	for i := range rows {
		per[i] = median(perBlock[i])
	}
	return rows, per, nil
}

// writeSplit prints the split as a Markdown section.
func writeSplit(b *strings.Builder, rows []splitRow, per []float64) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(b, "\nWhere a first execution's server CPU goes: the library's statements beside variants on its own table that each drop one thing they do (references the library never sends), the serving backend's CPU as in the server CPU/op column above, but with synchronous_commit off for this one session (each row commits twice, and the WAL flushes' cost would drown differences of a few microseconds), the median of %d blocks of 50 first executions each, interleaved:\n\n", max(profileOps/50, 1)*6)
	b.WriteString("| statements | what they are | server CPU/op | less than the library |\n|---|---|--:|--:|\n")
	for i, r := range rows {
		fmt.Fprintf(b, "| %s | %s | %.1fµs | %.1fµs |\n", r.name, r.what, per[i], per[0]-per[i])
	}
	b.WriteString("\nThe library's first execution while most of its recent claims met new keys is the first row: the plain insert with its lock_timeout set (the second row's difference); a replay, an in-progress duplicate and a mismatch then take a second statement, read_claim.sql. While most met a row it reads first (third row), and a replay costs that read alone. The fourth row is a DoTx's claim, both in one statement; the next two are other ways to answer every claim in one round trip. The waiter check is what lets a completion wake waiters in other processes without notifying on every commit. The plain statements' row is the floor for the library's table; its difference from the raw baseline is the table's (owner, lease, expiry and held columns).\n")
}
