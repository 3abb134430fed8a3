package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/examples/internal/exstore"
	"github.com/stagedoor/once/examples/internal/exstoretest"
	"github.com/stagedoor/once/reconcile"
)

// clockSlack bounds how far a store's clock (the server's, counted in its
// own precision) may put a hold's end from the test's view of it.
const clockSlack = time.Second

// TestHeldPaymentChargedOnce runs the demo's held payments on every store
// and checks what each layer did: the provider's ledger (one charge per
// order, and no request while the key was held), the buyer's answers (504,
// then 409 with a Retry-After of the hold the store reported and no replay
// marker, then the 201 replayed), and the reconciler's passes.
func TestHeldPaymentChargedOnce(t *testing.T) {
	t.Parallel()
	exstoretest.EachOf(t, "payments_held", exstore.Kinds, func(t *testing.T, cfg exstore.Config) {
		t.Parallel()
		var out bytes.Buffer
		d := openTestDemo(t, cfg, &out)
		results, err := d.playHeld(context.Background())
		require.NoError(t, err, out.String())
		require.Len(t, results, 2, out.String())
		charged, notCharged := results[0], results[1]
		require.Equal(t, "a7c3e5f1", charged.Order)
		require.Equal(t, "f0b8d2c6", notCharged.Order)
		defer func() {
			if t.Failed() {
				t.Log(out.String())
			}
		}()

		// The provider charged, then went down: held, 409, resolved by the
		// reconciler, replayed.
		r := charged.Replies
		require.Equal(t, []int{http.StatusGatewayTimeout, http.StatusConflict, http.StatusCreated}, statuses(r))
		checkHeldAnswers(t, charged)
		assert.Equal(t, "true", r[2].Replayed, "the resolved charge is replayed")
		assert.Equal(t, chargeBody(t, charged), r[2].Body, "the replay is the 201 the first request would have got")
		require.Len(t, charged.Passes, 2)
		assert.Equal(t, passOf(1, 0, 1, 1), counts(charged.Passes[0]), "the provider was down: the lookup failed, the key stays held")
		assert.Equal(t, passOf(1, 1, 0, 0), counts(charged.Passes[1]), "the reconciler found the charge and resolved the key")
		assert.Equal(t, ledger{charges: 1, requests: 1, dropped: charged.Resends, lookups: 2}, charged.Ledger,
			"one charge; the retries while held and the replay never reached the provider")
		assert.Equal(t, 4, charged.Resends, "the shop's client resent the charge until its attempts ran out")

		// The provider never got the request: the reconciler leaves the key
		// held; the retry after the hold charges once, then replays.
		r = notCharged.Replies
		st := statuses(r)
		require.GreaterOrEqual(t, len(st), 5)
		assert.Equal(t, []int{http.StatusGatewayTimeout, http.StatusConflict}, st[:2])
		for _, s := range st[2 : len(st)-2] {
			assert.Equal(t, http.StatusConflict, s, "held until the hold ends")
		}
		assert.Equal(t, []int{http.StatusCreated, http.StatusCreated}, st[len(st)-2:])
		checkHeldAnswers(t, notCharged)
		first, reload := r[len(r)-2], r[len(r)-1]
		assert.Empty(t, first.Replayed, "the retry after the hold ran the charge")
		assert.Equal(t, "true", reload.Replayed)
		assert.Equal(t, chargeBody(t, notCharged), first.Body)
		assert.Equal(t, first.Body, reload.Body)
		assert.GreaterOrEqual(t, first.At.Sub(notCharged.Clicked), holdFor, "the hold was kept, not ended early")
		require.Len(t, notCharged.Passes, 1)
		assert.Equal(t, passOf(1, 0, 1, 0), counts(notCharged.Passes[0]), "no charge: the reconciler leaves the key held")
		assert.Equal(t, ledger{charges: 1, requests: 1, dropped: notCharged.Resends + 1, lookups: 1}, notCharged.Ledger,
			"one charge, made by the retry after the hold")
		assert.Contains(t, out.String(), "held orders charged: 2, 1 per order")
	})
}

// checkHeldAnswers checks the answers of a held order up to its 201: the
// first request's 504 with the hold as Retry-After, and each 409's Problem
// Details, without the replay marker, with the Retry-After of the hold
// the store reported, rounded up to seconds.
func checkHeldAnswers(t *testing.T, res heldResult) {
	t.Helper()
	first := res.Replies[0]
	assert.Equal(t, "application/problem+json", first.Type)
	assert.Equal(t, strconv.Itoa(int(holdFor/time.Second)), first.RetryAfter)
	assert.Empty(t, first.Replayed)
	for _, r := range res.Replies[1:] {
		if r.Status != http.StatusConflict {
			continue
		}
		assert.Equal(t, "application/problem+json", r.Type)
		assert.Empty(t, r.Replayed, "a 409 is not a replay")
		require.NotNil(t, r.Busy, "the 409 comes from the held key")
		assert.True(t, r.Busy.Held)
		left := r.Busy.HoldRemaining
		assert.Greater(t, left, time.Duration(0))
		assert.LessOrEqual(t, left, holdFor)
		assert.GreaterOrEqual(t, left, holdFor-r.At.Sub(res.Clicked)-clockSlack, "the hold began after the click")
		ra, err := strconv.Atoi(r.RetryAfter)
		require.NoError(t, err, r.RetryAfter)
		assert.Equal(t, int((left+time.Second-1)/time.Second), ra, "Retry-After is the hold left, rounded up")
		assert.LessOrEqual(t, ra, int(holdFor/time.Second))
	}
}

func statuses(rs []reply) []int {
	var out []int
	for _, r := range rs {
		out = append(out, r.Status)
	}
	return out
}

// chargeBody is the 201 body of the provider's record of res's charge.
func chargeBody(t *testing.T, res heldResult) string {
	t.Helper()
	require.NotNil(t, res.Charge, "the provider made a charge with the DerivedKey")
	b, err := json.Marshal(res.Charge)
	require.NoError(t, err)
	return string(b) + "\n"
}

type passCounts struct{ examined, resolved, leftHeld, failed int }

func passOf(examined, resolved, leftHeld, failed int) passCounts {
	return passCounts{examined, resolved, leftHeld, failed}
}

func counts(r reconcile.Report) passCounts {
	return passCounts{r.Examined, r.Resolved, r.LeftHeld, r.Failed}
}

// TestRunPlaysEveryStory runs the demo as go run does, on memory: the
// orders, the held payments, then the steps (on SQLite).
func TestRunPlaysEveryStory(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), &out, exstoretest.Config(t, exstore.Memory, "payments")), out.String())
	assert.Contains(t, out.String(), "charges made: 5 for 5 paid orders (1 per order); the declined card: 0")
	assert.Contains(t, out.String(), "held orders charged: 2, 1 per order")
	assert.Contains(t, out.String(), "memory keeps nothing across processes, so this part runs on SQLite")
	assert.Contains(t, out.String(), "every order: 1 stock hold, 1 charge, 1 order row")
}
