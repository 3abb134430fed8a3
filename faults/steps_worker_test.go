package faults

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/jackc/pgx/v5"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
)

// roleSteps is a worker whose intent is three steps (see stepsFn).
const roleSteps = "steps"

// Step boundaries, in the order a first execution passes them: the
// failpoints of TestSteps. complete-before and complete-after (inside
// Complete) end the list.
const (
	pointChargeBefore     = "charge-before"     // fn started, no step run
	pointChargeEffect     = "charge-effect"     // the charge made, its checkpoint not written
	pointChargeCheckpoint = "charge-checkpoint" // the charge checkpointed, the second step not begun
	pointShipEffect       = "ship-effect"       // the shipment made, its checkpoint not written
	pointShipCheckpoint   = "ship-checkpoint"   // the shipment checkpointed
	pointNotifyBefore     = "notify-before"     // StepAtMostOnce: marked started, nothing sent
	pointNotifyEffect     = "notify-effect"     // StepAtMostOnce: sent, its checkpoint not written
	pointNotifyCheckpoint = "notify-checkpoint" // StepAtMostOnce: sent and checkpointed
	pointOrderEffect      = "order-effect"      // the order row written (StepTx: in its open transaction)
	pointOrderCommit      = "order-commit"      // StepTx: the checkpoint written in the transaction, before its commit
)

// stepsHeld is the answer a steps client takes for a key held by an
// interrupted at-most-once step: the intent's outcome is unknown, and the
// key waits for an operator.
const stepsHeld = "held"

// stepsAtMostOnce reports whether key's second step is the at-most-once
// "notify" (about half the keys) rather than "ship".
func stepsAtMostOnce(key string) bool {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return h.Sum32()%2 == 1
}

// stepKey is the derived key of a step's downstream call for the intent
// key: the ledger (fenced) deduplicates by it and counts every call.
func stepKey(step, key string) string { return once.DerivedKey(step, key) }

// orderTx is a transaction of a SQL store in which the order step writes
// its row; Commit fires pointOrderCommit before committing.
type orderTx interface {
	once.Tx
	// exec runs a statement with ? placeholders.
	exec(ctx context.Context, query string, args ...any) error
	// orders returns the values of the order rows in table, by intent.
	orders(ctx context.Context, table string) (map[string][]string, error)
}

// ordersQuery reads an orders table.
const ordersQuery = "SELECT intent, val FROM %s ORDER BY intent"

// scanOrders collects the rows of ordersQuery.
func scanOrders(next func() bool, scan func(dest ...any) error, rowsErr func() error) (map[string][]string, error) {
	out := map[string][]string{}
	for next() {
		var key, value string
		if err := scan(&key, &value); err != nil {
			return nil, err
		}
		out[key] = append(out[key], value)
	}
	return out, rowsErr()
}

// orderBegin begins StepTx's transaction on a SQL store (nil for Redis).
type orderBegin func(ctx context.Context) (orderTx, backends.Store, error)

// pgOrderTx is a pgx transaction as an orderTx.
type pgOrderTx struct {
	pgx.Tx
	trig *trigger
	key  string
}

func (t pgOrderTx) exec(ctx context.Context, query string, args ...any) error {
	_, err := t.Exec(ctx, dollarPlaceholders(query), args...)
	return err
}

func (t pgOrderTx) orders(ctx context.Context, table string) (map[string][]string, error) {
	rows, err := t.Query(ctx, fmt.Sprintf(ordersQuery, table))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return scanOrders(rows.Next, rows.Scan, rows.Err)
}

func (t pgOrderTx) Commit(ctx context.Context) error {
	t.trig.hit(pointOrderCommit, t.key)
	return t.Tx.Commit(ctx)
}

// sqlOrderTx is a mysqlstore or sqlitestore transaction as an orderTx.
type sqlOrderTx struct {
	once.Tx
	tx   *sql.Tx
	trig *trigger
	key  string
}

func (t sqlOrderTx) exec(ctx context.Context, query string, args ...any) error {
	_, err := t.tx.ExecContext(ctx, query, args...)
	return err
}

func (t sqlOrderTx) orders(ctx context.Context, table string) (map[string][]string, error) {
	rows, err := t.tx.QueryContext(ctx, fmt.Sprintf(ordersQuery, table))
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }()
	return scanOrders(rows.Next, rows.Scan, rows.Err)
}

func (t sqlOrderTx) Commit(ctx context.Context) error {
	t.trig.hit(pointOrderCommit, t.key)
	return t.Tx.Commit(ctx)
}

// dollarPlaceholders turns ? placeholders into PostgreSQL's $n.
func dollarPlaceholders(q string) string {
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// beginOrders is StepTx's begin on st's SQL store, the transaction's
// Commit hooked for key; nil on a store without transactions.
func beginOrders(st *openedStore, trig *trigger, key string) orderBegin {
	switch {
	case st.pg != nil:
		return func(ctx context.Context) (orderTx, backends.Store, error) {
			tx, bound, err := st.pg.BeginTx(ctx)
			return pgOrderTx{Tx: tx, trig: trig, key: key}, bound, err
		}
	case st.mysql != nil:
		return func(ctx context.Context) (orderTx, backends.Store, error) {
			tx, bound, err := st.mysql.BeginTx(ctx)
			return sqlOrderTx{Tx: tx, tx: tx.Tx, trig: trig, key: key}, bound, err
		}
	case st.sqlite != nil:
		return func(ctx context.Context) (orderTx, backends.Store, error) {
			tx, bound, err := st.sqlite.BeginTx(ctx)
			return sqlOrderTx{Tx: tx, tx: tx.Tx, trig: trig, key: key}, bound, err
		}
	}
	return nil
}

// insertOrder is the order row of key, in the table the driver created.
func insertOrder(ctx context.Context, tx orderTx, table, key, value, worker string, pid int) error {
	return tx.exec(ctx, "INSERT INTO "+table+" (intent, val, worker, pid) VALUES (?, ?, ?, ?)", key, value, worker, pid)
}

// stepsFn is fn of a steps worker: three steps, each passing its
// boundaries' failpoints. "charge" and then "ship" (or, for the keys
// stepsAtMostOnce picks, the at-most-once "notify") are calls to the
// fenced provider (the ledger) with a derived key, which counts every
// call and keeps the first; "order" writes a row with StepTx on a SQL
// store (begin not nil), or calls the provider like the others on Redis.
// Its answer names the three effects.
func stepsFn(l ledger, begin orderBegin, table string, trig *trigger, self string, pid int, seq *atomic.Int64, key string) func(context.Context) (string, error) {
	provider := func(step string, after string) func(context.Context) (string, error) {
		return func(ctx context.Context) (string, error) {
			value := fmt.Sprintf("%s/%d", self, seq.Add(1))
			got, err := l.apply(ctx, nil, stepKey(step, key), value, self, pid)
			if err != nil {
				return "", err
			}
			trig.hit(after, key)
			return got, nil
		}
	}
	return func(ctx context.Context) (string, error) {
		trig.exec()
		trig.hit(pointChargeBefore, key)
		charge, err := once.Step(ctx, "charge", provider("charge", pointChargeEffect))
		if err != nil {
			return "", err
		}
		trig.hit(pointChargeCheckpoint, key)
		var second string
		if stepsAtMostOnce(key) {
			send := provider("notify", pointNotifyEffect)
			second, err = once.StepAtMostOnce(ctx, "notify", func(ctx context.Context) (string, error) {
				trig.hit(pointNotifyBefore, key)
				return send(ctx)
			})
			if err != nil {
				return "", err
			}
			trig.hit(pointNotifyCheckpoint, key)
		} else {
			second, err = once.Step(ctx, "ship", provider("ship", pointShipEffect))
			if err != nil {
				return "", err
			}
			trig.hit(pointShipCheckpoint, key)
		}
		var order string
		if begin == nil {
			order, err = once.Step(ctx, "order", provider("order", pointOrderEffect))
		} else {
			order, err = once.StepTx(ctx, "order", begin, func(ctx context.Context, tx orderTx) (string, error) {
				value := fmt.Sprintf("%s/%d", self, seq.Add(1))
				if err := insertOrder(ctx, tx, table, key, value, self, pid); err != nil {
					return "", err
				}
				trig.hit(pointOrderEffect, key)
				return value, nil
			})
		}
		if err != nil {
			return "", err
		}
		return charge + " " + second + " " + order, nil
	}
}

// stepsCall is once.DoOutcome with stepsFn. A key held by an interrupted
// at-most-once step (this call's, or an earlier one's) is answered
// stepsHeld: a client told the outcome is unknown stops retrying it.
func stepsCall(scope once.Scope, st *openedStore, l ledger, table string, trig *trigger, self string, pid int) callFunc {
	var seq atomic.Int64
	return func(ctx context.Context, key string) (string, bool, error) {
		out, err := once.DoOutcome(ctx, scope, key, nil, stepsFn(l, beginOrders(st, trig, key), table, trig, self, pid, &seq, key))
		if isHeld(err) {
			return stepsHeld, false, nil
		}
		return out.Value, out.Status == once.Replayed, err
	}
}

// isHeld reports whether err says the key is held: an interrupted
// at-most-once step, or the key found held.
func isHeld(err error) bool {
	var inProgress *once.InProgressError
	return errors.Is(err, once.ErrStepInterrupted) || errors.As(err, &inProgress) && inProgress.Held
}
