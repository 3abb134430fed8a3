package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/stagedoor/once/backends"
)

func withParam(name, value string) func(*mysql.Config) {
	return func(c *mysql.Config) {
		if c.Params == nil {
			c.Params = map[string]string{}
		}
		c.Params[name] = value
	}
}

func sessionClaim(s backends.Store, key, owner string) (backends.ClaimResult, error) {
	return s.Claim(context.Background(), backends.ClaimParams{Scope: "session", Key: key, Owner: owner, Lease: time.Hour, Retention: time.Hour})
}

// A DSN with autocommit=0 ran the Store's statements in transactions
// nobody committed: the claim and Complete were acknowledged, no other
// session saw them, and once the pool closed a second claim ran the
// effect again. The Store now refuses such a session before any write.
func TestAutocommitOffSessionRefused(t *testing.T) {
	off := newDB(t, withParam("autocommit", "0"))
	off.SetMaxOpenConns(1)
	other := newStore(t, newDB(t, nil), Config{})
	for _, cfg := range []Config{{}, {ReadFirstClaims: true}, {OneRoundTripClaims: true}} {
		s := newStore(t, off, cfg)
		key := randomSuffix()
		r, err := sessionClaim(s, key, "first")
		if !errors.Is(err, ErrSession) || r.Claimed {
			t.Fatalf("%+v: claim on an autocommit=0 session: claimed=%v err=%v, want an ErrSession", cfg, r.Claimed, err)
		}
		var e *Error
		if !errors.As(err, &e) || e.Op != "claim" {
			t.Fatalf("%+v: err %T %v, want an *Error of Op claim", cfg, err, err)
		}
		if _, err := s.Complete(context.Background(), backends.CompleteParams{Scope: "session", Key: key, Owner: "first", Outcome: []byte("x"), Retention: time.Hour}); !errors.Is(err, ErrSession) {
			t.Fatalf("%+v: complete err %v, want ErrSession", cfg, err)
		}
		r, err = sessionClaim(other, key, "second")
		if err != nil || !r.Claimed {
			t.Fatalf("%+v: the key must be untouched: claimed=%v err=%v", cfg, r.Claimed, err)
		}
	}
	if err := newStore(t, off, Config{}).Migrate(context.Background()); !errors.Is(err, ErrSession) {
		t.Fatalf("Migrate on an autocommit=0 session: %v, want ErrSession", err)
	}
	// The transaction the driver's autocommit=0 session opened is
	// closed by closing the pool (rolled back on disconnect).
	_ = off.Close()
}

// A DSN pinning the session's timestamp froze UTC_TIMESTAMP(), so a lease
// taken on it had lapsed already for every other session. The Store now
// refuses the session.
func TestPinnedTimestampSessionRefused(t *testing.T) {
	pinned := newDB(t, withParam("timestamp", "1000000000"))
	other := newStore(t, newDB(t, nil), Config{})
	for _, cfg := range []Config{{}, {OneRoundTripClaims: true}} {
		s := newStore(t, pinned, cfg)
		key := randomSuffix()
		r, err := sessionClaim(s, key, "first")
		if !errors.Is(err, ErrSession) || r.Claimed {
			t.Fatalf("%+v: claim on a pinned-timestamp session: claimed=%v err=%v, want an ErrSession", cfg, r.Claimed, err)
		}
		r, err = sessionClaim(other, key, "second")
		if err != nil || !r.Claimed || r.TookOver {
			t.Fatalf("%+v: the key must be untouched: %+v err=%v", cfg, r, err)
		}
	}
}

// A session that only sets its time zone is fine: the Store reads
// UTC_TIMESTAMP(). Its check passes once and the Store works.
func TestTimeZoneSessionAccepted(t *testing.T) {
	s := newStore(t, newDB(t, withParam("time_zone", "'+09:00'")), Config{})
	other := newStore(t, newDB(t, nil), Config{})
	key := randomSuffix()
	if r, err := sessionClaim(s, key, "first"); err != nil || !r.Claimed {
		t.Fatalf("claim: %+v %v", r, err)
	}
	if r, err := sessionClaim(other, key, "second"); err != nil || r.Claimed || r.TookOver {
		t.Fatalf("second claim from a UTC session: %+v %v, want the lease held", r, err)
	}
	if !s.sessionOK.Load() {
		t.Fatal("the session check did not record its pass")
	}
}

// InTx checks the caller's transaction's session.
func TestInTxPinnedTimestampRefused(t *testing.T) {
	pinned := newDB(t, withParam("timestamp", "1000000000"))
	s := newStore(t, pinned, Config{})
	tx, err := pinned.BeginTx(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := sessionClaim(s.InTx(tx), randomSuffix(), "tx"); !errors.Is(err, ErrSession) {
		t.Fatalf("claim in a pinned-timestamp transaction: %v, want ErrSession", err)
	}
}

// A pool whose sessions ran at READ UNCOMMITTED (tx_isolation in the DSN,
// or the server's default) let a Claim's lock-free read see another
// transaction's uncommitted claim and outcome (a DoTx in flight): the
// duplicate was answered with an outcome that was then rolled back, and
// the key ran again. The Store now refuses such a session, on every claim
// order, in Migrate and in a transaction begun on it; a READ COMMITTED
// one is fine.
func TestReadUncommittedSessionRefused(t *testing.T) {
	ctx := context.Background()
	good := newDB(t, nil)
	dirty := newDB(t, withParam("tx_isolation", "'READ-UNCOMMITTED'"))
	s := newStore(t, good, Config{})
	for _, cfg := range []Config{{}, {ReadFirstClaims: true}, {OneRoundTripClaims: true}} {
		d := newStore(t, dirty, cfg)
		key := randomSuffix()
		tx, err := good.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
		if err != nil {
			t.Fatal(err)
		}
		ts := s.InTx(tx)
		if r, err := sessionClaim(ts, key, "tx"); err != nil || !r.Claimed {
			t.Fatalf("claim in tx: %+v %v", r, err)
		}
		if ok, err := ts.Complete(ctx, backends.CompleteParams{Scope: "session", Key: key, Owner: "tx", Outcome: []byte("uncommitted"), Retention: time.Hour}); err != nil || !ok {
			t.Fatalf("complete in tx: %v %v", ok, err)
		}
		r, err := sessionClaim(d, key, "dirty")
		_ = tx.Rollback() // the DoTx failed after all: nothing was recorded
		if !errors.Is(err, ErrSession) {
			t.Fatalf("%+v: claim on a READ UNCOMMITTED session: %+v err=%v, want an ErrSession", cfg, r, err)
		}
	}
	if err := newStore(t, dirty, Config{}).Migrate(ctx); !errors.Is(err, ErrSession) {
		t.Fatalf("Migrate on a READ UNCOMMITTED session: %v, want ErrSession", err)
	}
	tx, err := dirty.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := sessionClaim(newStore(t, dirty, Config{}).InTx(tx), randomSuffix(), "tx"); !errors.Is(err, ErrSession) {
		t.Fatalf("claim in a READ UNCOMMITTED session's transaction: %v, want ErrSession", err)
	}

	rc := newStore(t, newDB(t, withParam("tx_isolation", "'READ-COMMITTED'")), Config{})
	if r, err := sessionClaim(rc, randomSuffix(), "rc"); err != nil || !r.Claimed {
		t.Fatalf("claim on a READ COMMITTED session: %+v %v", r, err)
	}
}
