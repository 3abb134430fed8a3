// Package redisstore is the Redis backend of once, for go-redis v9: a
// single node, a Sentinel failover client or a Redis Cluster, through
// redis.UniversalClient.
//
// Each record is one Redis string key, created by Claim with SET NX GET
// (no script: a claim, a replay, an in-progress duplicate and a mismatch
// cost one SET and one PTTL, pipelined; a first claim, while nearly every
// key is new, one SET NX alone) and otherwise written by Lua
// scripts, so every operation is one round trip (a takeover two) and
// single-slot on a Cluster. A record's checkpoints (Checkpoint), when it
// has any, are a second string key beside it, the record's key followed
// by ":steps", in the same slot: the scripts that move the record's expiry
// give them the same one, so they die with it, and the claim's pipeline
// never reads them (a replay costs what it cost without them). Time is the key's PX TTL
// alone: a record stores its lease end, hold end and claim time as
// offsets back from its expiry, which PTTL turns into time left by the
// server's clock; the application's clock is never used. Expired records
// vanish by themselves; there is nothing to sweep. A pending record's TTL
// is at least its lease, and each renewal extends it.
//
// Redis 7.0 or later (or a server compatible with it, such as Valkey):
// SET with both NX and GET is 7.0's, and so are SPUBLISH and SSUBSCRIBE.
// New checks the version that INFO server reports and returns a
// *ServerVersionError for an older server; a server that hides INFO is
// not checked (see New). A Redis Cluster needs a *redis.ClusterClient:
// New refuses a node in cluster mode reached through any other client
// with a *ClusterModeError.
//
// # Setup
//
// The store has the shape of every once store, less what Redis needs not:
// New(ctx, client, *Config), where a nil *Config means defaults, checks
// the server and loads the scripts, hence its context; there is no table
// to migrate and nothing to sweep (keys expire by their TTL). Config's
// KeyPrefix plays the part of the SQL stores' Table.
//
// # Durations
//
// Redis counts in milliseconds: a lease or retention is rounded up to a
// whole millisecond (1 ns becomes 1 ms) and saturated at MaxDuration
// (about 292 years); every positive time.Duration up to math.MaxInt64
// therefore means at least what it says, or MaxDuration.
//
// # Driver retries
//
// go-redis re-sends a command or a pipeline whose reply was lost
// (MaxRetries). Every write recognises its own re-send: a Claim finding a
// pending record with its own owner token reports Claimed, a Complete or
// a Resolve whose owner token and outcome are already stored reports
// success, a Renew renews again, a Hold finding the record held by its
// own owner token reports true, a LeaseHeld by the same token extends its
// lease, a Checkpoint writes the same checkpoints again. A re-sent
// Release of a record without checkpoints and a re-sent Admin.Delete
// report false, as the contract allows: the first send deleted the
// record, which the re-send finds absent (a re-sent Release of a record
// with checkpoints ends its lease again and reports true).
//
// # Guarantees and their limits
//
// Within one Redis primary, Claim, Complete, Renew, Release, Checkpoint
// and Resolve are atomic and linearizable, and exactly one of any number
// of concurrent Claims of an absent key succeeds. Redis replication is
// asynchronous, however: a write acknowledged by a primary that fails
// before its replicas receive it is lost after a failover, so a completed
// record can become absent (its key runs again) and a claim can vanish (a
// concurrent duplicate can run). An eviction policy other than noeviction
// can delete records under memory pressure with the same effect (and a
// record's checkpoints apart from it), which is why New checks
// maxmemory-policy. A restart without persistence (appendonly yes,
// and appendfsync always for no loss at all) loses every record. See
// README.md for the settings that narrow these windows.
package redisstore

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/internal/claimmix"
)

// DefaultKeyPrefix is the prefix of every key the store writes unless
// Config.KeyPrefix says otherwise.
const DefaultKeyPrefix = "once:"

// Config configures a Store. A nil *Config means defaults.
type Config struct {
	// KeyPrefix is prepended to every record key, to share a database with
	// other data. It must not contain "{" (New refuses it with a
	// *KeyPrefixError): the records of a store whose prefix is another's
	// followed by "{" and more could share keys with the other's (prefix
	// "once:{5:" with scope "a", key ":x" writes the key of prefix
	// "once:" with scope "{1:a:", key "x"), and the other's List would walk
	// them; a "{...}" pair would also become the Cluster hash tag of every
	// record and put them all in one slot. Defaults to DefaultKeyPrefix
	// ("once:").
	KeyPrefix string

	// EvictionPolicyCheck says what New does when a primary's
	// maxmemory-policy is not noeviction (checked on every primary of a
	// Cluster): log a warning, return an *EvictionPolicyError, or skip the
	// check. Defaults to EvictionWarn.
	EvictionPolicyCheck EvictionCheck

	// Logger receives the eviction policy warning. Defaults to
	// slog.Default().
	Logger *slog.Logger
}

// Store is the Redis backend. It is safe for concurrent use. The zero value
// is not usable; call New.
type Store struct {
	client  redis.UniversalClient
	prefix  string
	sharded bool   // a *redis.ClusterClient: SPUBLISH / SSUBSCRIBE
	notify  string // "PUBLISH", or "SPUBLISH" on a Cluster
	// notifyArg is notify boxed once, for the completion's arguments.
	notifyArg any
	logger    *slog.Logger
	check     EvictionCheck
	subs      subscribers   // the shared Pub/Sub connections of Watch
	pipes     sync.Pool     // redis.Pipeliner for Claim, reused (go-redis keeps none after Exec)
	mix       *claimmix.Mix // whether Claim sends its SET alone first
}

var (
	_ backends.Store   = (*Store)(nil)
	_ backends.Watcher = (*Store)(nil)
)

// New returns a Store that uses client, which it never closes. It refuses
// a *redis.Ring, and a nil client (a nil interface or a nil pointer, such
// as a nil *redis.Client) or a zero *redis.Client or *redis.ClusterClient,
// with an *UnsupportedClientError, and a Config.KeyPrefix containing "{"
// with a *KeyPrefixError, before sending anything. New talks to
// Redis, within ctx: it sends each server (every primary of a
// *redis.ClusterClient) one INFO server cluster memory (without memory
// under EvictionIgnore), from which it checks the version, the cluster
// mode and, as cfg.EvictionPolicyCheck says, maxmemory-policy; a server
// that answers it with an error reply other than those below (one that
// hides INFO, or an ACL user allowed only some sections, such as
// +info|memory) is asked each section alone, and each check reads the
// section it needs from those replies. Then New loads the scripts into
// the server's script cache (on every node of a Cluster), so that
// scripted operations cost one EVALSHA from the first call. No other
// operation repeats these checks.
//
// Set ContextTimeoutEnabled in the client's options: go-redis ignores
// context deadlines and cancellation without it (its default), so a
// command on a stalled connection blocks for ReadTimeout and WriteTimeout,
// once per re-send (MaxRetries), whatever context the store is given.
// once's guarantee does not depend on it — the core cancels fn's context
// a fifth of the lease before the proven lease ends, whether or not a
// renewal in flight returns, and writes fn's outcome without waiting for
// that renewal — but without it a hung completion or release keeps Do
// from returning until go-redis gives up, and a caller's deadline does
// not end a claim early. New neither requires the option nor
// warns about it.
//
// It fails if Redis cannot be reached (ErrUnavailable); with a
// *ServerVersionError when a server reports a version older than 7.0
// (redis_version; valkey_version when there is no redis_version); with a
// *ClusterModeError when a server runs in cluster mode (cluster_enabled:1)
// and client is not a *redis.ClusterClient, which would send every
// command to one node; with an *Error of kind ErrServer when the server
// refuses the client's credentials (NOAUTH, WRONGPASS); and with an *Error
// of kind ErrUnavailable when it is loading its data set or running a
// long script (LOADING, BUSY, to INFO or to loading the scripts): that is
// transient, and New can be called again. An *Error of New's checks has
// Op "version check" or "eviction check", one of loading the scripts
// "new".
//
// A version it cannot read is not checked, nor is a server that answers
// INFO server with another error reply (a managed service that disables
// or renames INFO, an ACL user without it) or reports no version: on an
// older server the first Claim then fails with ErrServer. Nor is the
// cluster mode of one that hides INFO cluster: a cluster node reached
// without a *redis.ClusterClient then answers MOVED (ErrServer) for keys
// of the slots it does not serve. A server that hides INFO memory fails
// the eviction check (an *Error of kind ErrServer with the server's
// reply) unless EvictionPolicyCheck is EvictionIgnore.
func New(ctx context.Context, client redis.UniversalClient, cfg *Config) (*Store, error) {
	if err := checkClient(client); err != nil {
		return nil, err
	}
	if cfg == nil {
		cfg = &Config{}
	}
	if err := checkKeyPrefix(cfg.KeyPrefix); err != nil {
		return nil, err
	}
	s := &Store{
		client: client,
		prefix: cfg.KeyPrefix,
		logger: cfg.Logger,
		check:  cfg.EvictionPolicyCheck,
		mix:    claimmix.New(claimmix.Biased),
	}
	if s.prefix == "" {
		s.prefix = DefaultKeyPrefix
	}
	if s.logger == nil {
		s.logger = slog.Default()
	}
	s.pipes.New = func() any { return client.Pipeline() }
	_, s.sharded = client.(*redis.ClusterClient)
	s.notify = "PUBLISH"
	if s.sharded {
		s.notify = "SPUBLISH"
	}
	s.notifyArg = s.notify
	if err := s.prepare(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// prepare checks the server (inspect) and loads the scripts: New's first
// commands. A client of the caller's own type that wraps a nil or zero
// go-redis client (which checkClient cannot tell from a working wrapper)
// panics on its first command; prepare reports that as an
// *UnsupportedClientError instead of crashing the caller.
func (s *Store) prepare(ctx context.Context) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &UnsupportedClientError{
				Client: fmt.Sprintf("%T", s.client),
				Reason: fmt.Sprintf("its first command panicked (%v); does it wrap a nil client? %s", v, needs),
			}
		}
	}()
	if err := s.inspect(ctx); err != nil {
		return err
	}
	for _, sc := range allScripts {
		if err := sc.Load(ctx, s.client).Err(); err != nil {
			return newError(ctx, "new", err)
		}
	}
	return nil
}

// Close stops waiting without polling: it closes the Pub/Sub
// connections Watch shares (one per primary on a Cluster; see Watch), if
// any, and returns once every goroutine and timer function that serves
// them has returned, so that nothing of the Store outlives it (a goroutine
// leak check, such as go.uber.org/goleak's, passes right after Close;
// without Close a connection and its goroutine stay up to 5 s after its
// last waiter left). This holds too for a connection that is failing or
// going idle at the time: Close waits for it. Waiters are woken, as by a
// lost connection; a Watch in progress and every later Watch return an
// *Error of kind backends.ErrClosed, and the core then waits by polling.
// Close does not close the client, which the caller owns, and every other
// method keeps working on it. Close is safe to call more than once and
// concurrently with Watch; it returns nil.
func (s *Store) Close() error {
	s.subs.close()
	return nil
}

func (s *Store) key(scope, key string) string { return recordKey(s.prefix, scope, key) }

// keys returns the keys of the record of (scope, key) and of its
// checkpoints, the KEYS of a script that keeps, returns or drops them.
func (s *Store) keys(scope, key string) []string {
	record, steps := recordKeys(s.prefix, scope, key)
	return []string{record, steps}
}

// precheck fails fast on an ended context and rejects, with an *Error of
// kind ErrInvalid, a scope or key no record can have (see checkNames), an
// owner token backends.OwnerProblem refuses (empty on any operation but
// "resolve", longer than backends.MaxOwnerLen bytes, invalid UTF-8, NUL)
// and a fingerprint
// longer than backends.MaxFingerprintLen bytes (see "Inputs" in package
// backends). Both limits fit the record's one-byte length fields.
func precheck(ctx context.Context, op, scope, key, owner string, fp []byte) error {
	if err := ctx.Err(); err != nil {
		return translate(ctx, op, err)
	}
	if err := checkNames(op, scope, key); err != nil {
		return err
	}
	if r := backends.OwnerProblem(owner, op != "resolve"); r != "" {
		return invalid(op, "owner "+r)
	}
	if r := backends.FingerprintProblem(fp); r != "" {
		return invalid(op, "fingerprint "+r)
	}
	return nil
}

// Complete implements backends.Store with one EVALSHA. The record keeps
// its checkpoints, which get its new expiry. It also reports
// true when the record already holds this owner's completion with this
// very outcome, so that a driver retry of an applied Complete is not
// mistaken for a lost claim.
func (s *Store) Complete(ctx context.Context, p backends.CompleteParams) (bool, error) {
	const op = "complete"
	if err := precheck(ctx, op, p.Scope, p.Key, p.Owner, nil); err != nil {
		return false, err
	}
	ms := millis(p.Retention)
	a := s.newCompleteArgs(ctx, &p, ms)
	_ = s.client.Process(ctx, &a.cmd)
	cmd := &a.cmd
	if err := cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		// The server lost its script cache (a restart, a failover, SCRIPT
		// FLUSH): EVAL sends the script and reloads it, as Script.Run does.
		cmd = completeScript.Eval(ctx, s.client, s.keys(p.Scope, p.Key), p.Owner, p.Outcome, ms, s.notify)
	}
	return boolReply(ctx, op, cmd)
}

// Renew implements backends.Store with one EVALSHA. The record's TTL is
// kept, or raised to the new lease when that is longer.
func (s *Store) Renew(ctx context.Context, p backends.RenewParams) (bool, error) {
	const op = "renew"
	if err := precheck(ctx, op, p.Scope, p.Key, p.Owner, nil); err != nil {
		return false, err
	}
	return s.runBool(ctx, op, renewScript, p.Scope, p.Key, p.Owner, millis(p.Lease))
}

// Release implements backends.Store with one EVALSHA: it deletes a record
// without checkpoints, and ends the lease of one with checkpoints, which
// keeps them and its expiry. Either way it wakes the key's watchers, who
// may claim it at once.
func (s *Store) Release(ctx context.Context, p backends.ReleaseParams) (bool, error) {
	const op = "release"
	if err := precheck(ctx, op, p.Scope, p.Key, p.Owner, nil); err != nil {
		return false, err
	}
	return s.runBool(ctx, op, releaseScript, p.Scope, p.Key, p.Owner, s.notify)
}

// onlyLeasedArg is resolve.lua's ARGV[6] (OnlyLeased).
func onlyLeasedArg(only bool) string {
	if only {
		return "1"
	}
	return ""
}

// Resolve implements backends.Store with one EVALSHA. The completed
// record stores p.Owner, so that a re-send reports Resolved.
func (s *Store) Resolve(ctx context.Context, p backends.ResolveParams) (backends.ResolveResult, error) {
	const op = "resolve"
	if err := precheck(ctx, op, p.Scope, p.Key, p.Owner, p.Fingerprint); err != nil {
		return backends.ResolveResult{}, err
	}
	v, err := resolveScript.Run(ctx, s.client, s.keys(p.Scope, p.Key),
		p.Fingerprint, p.Owner, p.Outcome, millis(p.Retention), s.notify, onlyLeasedArg(p.OnlyLeased)).Result()
	if err != nil {
		return backends.ResolveResult{}, translate(ctx, op, err)
	}
	switch v {
	case int64(1):
		return backends.ResolveResult{Resolved: true}, nil
	case int64(0):
		if p.OnlyLeased {
			return backends.ResolveResult{}, nil // absent
		}
	}
	rec, err := existing(op, v)
	return backends.ResolveResult{Existing: rec}, err
}

// runBool runs sc on the record of (scope, key) and its checkpoints
// (KEYS[1] and KEYS[2]) and reads its 0 or 1.
func (s *Store) runBool(ctx context.Context, op string, sc *redis.Script, scope, key string, args ...any) (bool, error) {
	return boolReply(ctx, op, sc.Run(ctx, s.client, s.keys(scope, key), args...))
}

// boolReply reads the 0 or 1 of a fenced script's reply.
func boolReply(ctx context.Context, op string, cmd *redis.Cmd) (bool, error) {
	n, err := cmd.Int64()
	if err != nil {
		return false, translate(ctx, op, err)
	}
	switch n {
	case 0:
		return false, nil
	case 1:
		return true, nil
	}
	return false, corrupt(op, "reply value")
}
