//go:build ignore

package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	idempotency "github.com/faustbrian/go-idempotency"
	idempotencypostgres "github.com/faustbrian/go-idempotency/postgres"
	idempotencyvalkey "github.com/faustbrian/go-idempotency/valkey"
	valkeygo "github.com/valkey-io/valkey-go"

	"github.com/stagedoor/once/bench/harness"
	"github.com/stagedoor/once/bench/peers"
)

// faustbrianPeer is github.com/faustbrian/go-idempotency: Service.Begin
// and Complete, as its quickstart calls them, over its postgres store (the
// run's pgx pool; the table from SchemaMigration().Up) and over its
// Valkey store on a valkey-go client of the run's Redis server. The store
// is made with New, not Open: Open refuses any server but Valkey 9 or
// newer, and the run's server is Redis.
var faustbrianPeer = peers.Peer{
	Name: "faustbrian",
	Postgres: func(ctx context.Context, e *peers.Env) (*harness.Target, error) {
		if _, err := e.Pool.Exec(ctx, idempotencypostgres.SchemaMigration().Up); err != nil {
			return nil, err
		}
		s, err := idempotencypostgres.New(e.Pool, idempotencypostgres.Options{Retention: harness.Retention, OwnerTokens: ownerToken})
		if err != nil {
			return nil, err
		}
		return faustbrianTarget(s, e.ID)
	},
	Redis: func(_ context.Context, e *peers.Env) (*harness.Target, error) {
		client, err := valkeygo.NewClient(valkeygo.ClientOption{InitAddress: []string{e.Redis.Options().Addr}})
		if err != nil {
			return nil, err
		}
		e.OnClose(client.Close)
		s, err := idempotencyvalkey.New(client, idempotencyvalkey.Options{Prefix: e.RedisPrefix + "faustbrian", Retention: harness.Retention, OwnerTokens: ownerToken})
		if err != nil {
			return nil, err
		}
		return faustbrianTarget(s, e.ID)
	},
}

// ownerToken is the owner token of the library's guides: 256 random bits
// in hex.
func ownerToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// faustbrianTarget runs charge when Begin says Execute and records its
// encoded result with Complete; a replay is Begin answering replayed with
// the stored result, which it decodes and checks. A key is the run's
// namespace and tenant with the peers' key as its value.
func faustbrianTarget(s idempotency.Store, runID string) (*harness.Target, error) {
	svc, err := idempotency.NewService(s)
	if err != nil {
		return nil, err
	}
	fp, err := idempotency.NewFingerprint("v1", harness.FpA)
	if err != nil {
		return nil, err
	}
	begin := func(ctx context.Context, key string) (idempotency.BeginResult, error) {
		k, err := idempotency.NewKey("once-peers", runID, "charge", "bench", key)
		if err != nil {
			return idempotency.BeginResult{}, err
		}
		return svc.Begin(ctx, idempotency.BeginRequest{Acquire: idempotency.AcquireRequest{Key: k, Fingerprint: fp, Lease: harness.Lease}})
	}
	t := &harness.Target{}
	t.First = func(ctx context.Context, key string) error {
		r, err := begin(ctx, key)
		if err != nil || !r.Execute || r.Outcome != idempotency.OutcomeAcquired {
			return fmt.Errorf("first execution of %s: %v, outcome %s", key, err, r.Outcome)
		}
		body, err := harness.RawResult(ctx)
		if err != nil {
			return err
		}
		if _, err := svc.Complete(ctx, idempotency.CompleteRequest{Ownership: r.Record.Ownership(), Result: body}); err != nil {
			return fmt.Errorf("complete of %s: %w", key, err)
		}
		return nil
	}
	t.Replay = func(ctx context.Context, key string) error {
		r, err := begin(ctx, key)
		if err != nil || r.Outcome != idempotency.OutcomeReplayed {
			return fmt.Errorf("replay of %s: %v, outcome %s", key, err, r.Outcome)
		}
		return harness.RawReplay(r.Record.Result)
	}
	return t, nil
}
