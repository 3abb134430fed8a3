package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stagedoor/once/internal/pgsql"
)

// The split of a first execution's server CPU: the library's two
// statements, then the same work with one guarantee dropped per row, each
// row keeping the previous rows' drops, down to the raw baseline. The
// variants are references the library never sends: each gives up
// something the contract promises.
const (
	// splitPlainInsert: $1 scope, $2 key, $3 fingerprint, $4 owner, $5
	// lease µs, $6 retention µs. The claim's columns, as a plain INSERT …
	// ON CONFLICT DO NOTHING: insert_claim.sql without the lock_timeout
	// that bounds its wait for an uncommitted transaction holding the key,
	// and like it returning no row (a RETURNING's result row would count
	// against the lock_timeout's difference).
	splitPlainInsert = `INSERT INTO {table} (scope, key, fingerprint, state, owner, lease_until, expires_at, claimed_at)
VALUES ($1::text, $2::text, $3::bytea, 1, $4::text,
	clock_timestamp() + $5::bigint * interval '1 microsecond',
	clock_timestamp() + greatest($5::bigint, $6::bigint) * interval '1 microsecond',
	clock_timestamp())
ON CONFLICT (scope, key) DO NOTHING`
	// splitPlainUpdate: $1 scope, $2 key, $3 outcome. The completion's
	// columns, unfenced, as the seed's UPDATE.
	splitPlainUpdate = `UPDATE {table} SET state = 2, lease_until = NULL, outcome = $3::bytea
WHERE scope = $1::text AND key = $2::text`
)

// splitRow is one line of the split: a claim-like statement, then a
// completion-like one, per key; without names the guarantee this row
// gives up beside the row above it.
type splitRow struct {
	name, without   string
	claim, complete func(key string) error
}

// splitBlocks is how many blocks of 50 first executions each row of the
// split runs (interleaved with the other rows' blocks); its median per
// row is printed. Adjacent rows differ by a small fraction of a first
// execution; with fewer blocks that difference moved by as much from one
// run to the next.
func splitBlocks() int { return max(profileOps/50, 1) * 20 }

// measureSplit runs each row's statements as prepared statements on conn,
// in interleaved blocks of 50 keys, and returns each row's server CPU per
// first execution (the serving backend's, as measureCPU), the median over
// the blocks, in row order.
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
	// The completion without its waiter check: the RETURNING that holds
	// it (a result row the statement needs only for it) is replaced by a
	// condition that only keeps $6 typed, as the plain UPDATE below
	// returns no row either.
	noWaiterCheck := strings.Replace(lib.Complete, "\nRETURNING "+pgsql.NotifySlot(table, "$6"), "\n\tAND ($6::int IS NOT NULL)", 1)
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
		{"library: insert_claim.sql, complete.sql", "", claim, complete},
		{"plain insert, complete.sql", "the bound on a claim's wait for an uncommitted transaction (insert_claim.sql's lock_timeout)", insert, complete},
		{"plain insert, complete.sql without its waiter check", "waking waiters in other processes without notifying on every commit (pg_try_advisory_xact_lock)", insert, func(key string) error {
			return exec(noWaiterCheck, scope, key, owner, storedOutcome, retentionUS, pgsql.Slot(scope, key))
		}},
		{"plain insert, unfenced UPDATE", "fencing (only the live owner's completion applies) and the completed record's expiry", insert, func(key string) error {
			return exec(plainUpdate, scope, key, storedOutcome)
		}},
		{"raw baseline: the seed's insert and update, its own table", "the record's owner, lease, expiry and hold columns", func(key string) error {
			return exec(seedInsert, key, scope, fpA)
		}, func(key string) error {
			return exec(seedComplete, key, scope, 200, storedOutcome)
		}},
	}
	perBlock := make([][]float64, len(rows)) // µs per first execution, one per block
	var keys keySeq
	const block = 50
	blocks := splitBlocks()
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
	fmt.Fprintf(b, "\nWhere a first execution's server CPU goes: the library's statements, then the same work on its own table giving up one more guarantee per row (each row also gives up what the rows above it gave up), down to the raw baseline; the serving backend's CPU as in the server CPU/op column above, but with synchronous_commit off for this one session (each row commits twice, and the WAL flushes' cost would drown differences of a few microseconds), the median of %d blocks of 50 first executions each, interleaved:\n\n", splitBlocks())
	b.WriteString("| statements | server CPU/op | less than the row above | what that difference buys |\n|---|--:|--:|---|\n")
	for i, r := range rows {
		step, buys := "–", "–"
		if i > 0 {
			step, buys = fmt.Sprintf("%.1fµs", per[i-1]-per[i]), r.without
		}
		fmt.Fprintf(b, "| %s | %.1fµs | %s | %s |\n", r.name, per[i], step, buys)
	}
	b.WriteString("\nThe rows below the first are references the library never sends. The first row is a first execution while most of the Store's recent claims met new keys; a replay, an in-progress duplicate and a mismatch then take a second statement, read_claim.sql (while most met a row the claim reads first, and a replay costs that read alone).\n")
}
