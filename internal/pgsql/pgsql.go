// Package pgsql is the one home of the PostgreSQL backend's storage
// language: every statement that backends/postgres sends is here, the
// record statements as embedded .sql files (sql/*.sql, each documented at
// its top) and the few bookkeeping statements of transactions and
// migrations below. The benchmark (bench/) reads the same texts to profile
// the library's statements with EXPLAIN (ANALYZE, WAL).
//
// In every text, {table} stands for the quoted, schema-qualified records
// table and {notify} for the pg_notify call that wakes the waiters of the
// key $1, $2 (see Notify), or {notify:$N} for the same call given the
// key's slot in parameter $N (see NotifySlot); Render substitutes them.
package pgsql

import (
	"crypto/sha256"
	"embed"
	"encoding/binary"
	"encoding/hex"
	"regexp"
	"strconv"
	"strings"
)

//go:embed sql/*.sql
var files embed.FS

func file(name string) string {
	b, err := files.ReadFile("sql/" + name + ".sql")
	if err != nil {
		panic("pgsql: missing embedded " + name + ".sql") // a build defect, caught by the tests
	}
	return string(b)
}

// The record statements, with {table} unrendered. Their parameters are
// documented at the top of each file.
var (
	// InsertClaim and ReadClaim are a claim's two plain statements, sent
	// in the order its Store's recent claims favour (postgres.Store.Claim).
	InsertClaim = file("insert_claim")
	ReadClaim   = file("read_claim")
	// ClaimTx is both in one statement for a caller's transaction
	// (postgres.Store.InTx), which at REPEATABLE READ and SERIALIZABLE
	// fails instead of answering from a snapshot older than the key's row.
	ClaimTx  = file("claim_tx")
	Takeover = file("takeover")
	Complete = file("complete")
	Renew    = file("renew")
	Release  = file("release")
	Resolve  = file("resolve")
	Sweep    = file("sweep")
	Get      = file("get")
	Delete   = file("delete")
	// Hold, LeaseHeld, List, ListHeld and Count implement the held state
	// and listing (backends.Store.Hold, backends.Lister).
	Hold      = file("hold")
	LeaseHeld = file("leaseheld")
	List      = file("list")
	ListHeld  = file("list_held")
	Count     = file("count")
	// Checkpoint writes a pending record's checkpoints
	// (backends.Store.Checkpoint).
	Checkpoint = file("checkpoint")
)

// Statements are the record statements rendered for one table.
type Statements struct {
	Takeover, Complete, Renew, Release, Resolve, Sweep, Get, Delete string
	Hold, LeaseHeld, List, ListHeld, Count, Checkpoint              string
	InsertClaim, ReadClaim, ClaimTx                                 string
}

var slottedNotify = regexp.MustCompile(`\{notify:(\$[1-9][0-9]*)\}`)

// Render returns the record statements for table, which must already be
// quoted and schema-qualified (pgx.Identifier.Sanitize).
func Render(table string) Statements {
	r := strings.NewReplacer("{table}", table, "{notify}", Notify(table))
	render := func(text string) string {
		text = slottedNotify.ReplaceAllStringFunc(text, func(m string) string {
			return NotifySlot(table, slottedNotify.FindStringSubmatch(m)[1])
		})
		return r.Replace(text)
	}
	return Statements{
		ClaimTx:     render(ClaimTx),
		InsertClaim: render(InsertClaim),
		ReadClaim:   render(ReadClaim),
		Takeover:    render(Takeover),
		Complete:    render(Complete),
		Renew:       render(Renew),
		Release:     render(Release),
		Resolve:     render(Resolve),
		Sweep:       render(Sweep),
		Get:         render(Get),
		Delete:      render(Delete),
		Hold:        render(Hold),
		LeaseHeld:   render(LeaseHeld),
		List:        render(List),
		ListHeld:    render(ListHeld),
		Count:       render(Count),
		Checkpoint:  render(Checkpoint),
	}
}

// Transaction bookkeeping of the backend's InTx store: a Claim or Resolve
// runs between these, in one pipelined batch, so that a failed statement
// (its lock timeout fired) rolls back to the savepoint and leaves the
// caller's transaction usable, and the transaction's own lock_timeout is
// restored after the statement set its own.
const (
	Savepoint          = `SAVEPOINT once_claim`
	ReleaseSavepoint   = `RELEASE SAVEPOINT once_claim`
	RollbackSavepoint  = `ROLLBACK TO SAVEPOINT once_claim; RELEASE SAVEPOINT once_claim`
	SaveLockTimeout    = `SELECT set_config('once.saved_lock_timeout', current_setting('lock_timeout'), true)`
	RestoreLockTimeout = `SELECT set_config('lock_timeout', current_setting('once.saved_lock_timeout'), true)`
)

// The mark of the InTx store's Savepointer (backends.Savepointer), taken
// by once.DoTx after the claim, under a name of its own so that the
// claim's bookkeeping above never releases it.
const (
	HandlerSavepoint         = `SAVEPOINT once_handler`
	RollbackHandlerSavepoint = `ROLLBACK TO SAVEPOINT once_handler`
)

// Migration bookkeeping of the backend's Migrate. {versions} stands for the
// quoted, schema-qualified <Table>_migrations table, {schema} for the
// quoted schema.
const (
	// MigrateLock: $1 a text naming the table; a transaction-level
	// advisory lock derived from it serialises concurrent Migrates.
	MigrateLock         = `SELECT pg_advisory_xact_lock(hashtextextended($1::text, 0))`
	MigrateSchemaExists = `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1::text)`
	MigrateCreateSchema = `CREATE SCHEMA IF NOT EXISTS {schema}`
	MigrateVersions     = `CREATE TABLE IF NOT EXISTS {versions} (
	version    integer     PRIMARY KEY,
	name       text        NOT NULL,
	applied_at timestamptz NOT NULL DEFAULT clock_timestamp()
)`
	MigrateApplied = `SELECT version FROM {versions}`
	MigrateRecord  = `INSERT INTO {versions} (version, name) VALUES ($1::int, $2::text)`
)

// Waiting. The statements that change a record for its waiters (complete,
// hold, release, resolve, delete) each call pg_notify in the statement itself, on
// one channel per table, with a payload that names the key without
// revealing it: the first 16 hex digits (64 bits) of
// SHA-256(scope || 0x00 || key) over their UTF-8 bytes. A text never holds
// a NUL byte, so the separator is unambiguous; two keys that share a
// payload only cause a spurious wake-up, which the contract allows. The
// payload is 16 bytes whatever the key, far under NOTIFY's 8000.
//
// They notify only when somebody waits on a key of the same slot. A
// transaction that sent NOTIFY holds a lock global to the database from
// its commit's start to its end, WAL flush included, so notifying commits
// cannot share a flush (group commit): always notifying divides the
// throughput of concurrent completions (figures in the README). The keys
// of a table fall in Slots slots (Slot). A listening session holds a
// shared session-level advisory lock on each slot its waiters' keys fall
// in, in the table's lock space (LockSpace, the first key of the two-int4
// advisory lock form). A writing statement first tries an exclusive
// transaction-level lock on its key's slot: it gets it only when no
// session waits on that slot (then it sends nothing), and fails at once
// otherwise (then it notifies; a try never waits). The exclusive lock is
// held to the writer's commit, so a listener gets a slot only after the
// slot's writers committed: a change committed after the lock is held
// always notifies. Two writers of one slot at once make the second notify
// though nobody waits: a spurious notification, never a missed one.

// Slots is the number of advisory lock slots per table.
const Slots = 64

// Channel returns the notification channel of table (quoted and
// schema-qualified, as for Render): "once_" and 16 hex digits of its
// SHA-256, a lower-case identifier of 21 bytes, within PostgreSQL's 63
// whatever the schema and table names.
func Channel(table string) string {
	sum := sha256.Sum256([]byte(table))
	return "once_" + hex.EncodeToString(sum[:8])
}

// LockSpace returns the first key of table's advisory locks: 32 bits of
// its SHA-256, past those of its channel.
func LockSpace(table string) int32 {
	sum := sha256.Sum256([]byte(table))
	return int32(binary.BigEndian.Uint32(sum[8:12]))
}

// LockSpaceLiteral returns LockSpace(table) as an int4 SQL literal. It is
// quoted, since -2147483648 unquoted would parse as a bigint.
func LockSpaceLiteral(table string) string {
	return "'" + strconv.Itoa(int(LockSpace(table))) + "'::int4"
}

// Payload returns the notification payload of (scope, key), as the
// statements compute it on the server.
func Payload(scope, key string) string {
	sum := keyHash(scope, key)
	return hex.EncodeToString(sum[:8])
}

// Slot returns the advisory lock slot of (scope, key), as the statements
// compute it on the server.
func Slot(scope, key string) int {
	return int(keyHash(scope, key)[0] % Slots)
}

// keyHash is SHA-256(scope || 0x00 || key). Scope and key of a record are
// at most 255 bytes each, hashed from a stack buffer without allocating;
// longer ones (never sent to the server) are hashed all the same.
func keyHash(scope, key string) [sha256.Size]byte {
	var buf [2*255 + 1]byte
	if len(scope)+1+len(key) > len(buf) {
		h := sha256.New()
		h.Write([]byte(scope))
		h.Write([]byte{0})
		h.Write([]byte(key))
		var sum [sha256.Size]byte
		h.Sum(sum[:0])
		return sum
	}
	n := copy(buf[:], scope)
	buf[n] = 0
	n++
	n += copy(buf[n:], key)
	return sha256.Sum256(buf[:n])
}

// Notify returns the expression of table's writing statements that
// notifies the waiters of the key in their parameters $1 (scope) and $2
// (key) when a session listens; it is always true.
func Notify(table string) string {
	return notify(table, "get_byte("+keyHashSQL+", 0) % "+strconv.Itoa(Slots))
}

// NotifySlot is Notify for a statement that receives the key's Slot in
// parameter param ("$6"), computed by the client: the server then hashes
// the key only when it notifies, and a statement nobody waits for costs
// one advisory lock try. It is what the hot path (complete.sql) uses, and
// hold.sql.
func NotifySlot(table, param string) string {
	return notify(table, param+"::int")
}

const keyHashSQL = "sha256(convert_to($1::text, 'UTF8') || decode('00', 'hex') || convert_to($2::text, 'UTF8'))"

func notify(table, slot string) string {
	return "(CASE WHEN pg_try_advisory_xact_lock(" + LockSpaceLiteral(table) + ", " + slot + ")" +
		" THEN true ELSE pg_notify('" + Channel(table) + "', left(encode(" + keyHashSQL + ", 'hex'), 16)) IS NOT NULL END)"
}

// The statements of the Store's listening connection, with {channel}
// rendered by Channel and {lockspace} by LockSpace. LockSlots tries the
// shared locks of the slots in $1 (an int[]) without waiting and returns
// those it holds (a slot whose writer has not committed yet is tried again
// later); UnlockSlots releases them.
const (
	Listen      = `LISTEN {channel}`
	LockSlots   = `SELECT s FROM unnest($1::int[]) s WHERE pg_try_advisory_lock_shared({lockspace}, s)`
	UnlockSlots = `SELECT count(pg_advisory_unlock_shared({lockspace}, s)) FROM unnest($1::int[]) s`
)
