package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/examples/internal/exstore"
	"github.com/stagedoor/once/hashers"
)

// The shop process of the steps part (steps.go): the demo starts its own
// binary again with shopEnv set, and the process pays one order as three
// steps, telling the demo what it does on stdout, one event a line:
//
//	took-over                  the claim was the killed shop's, its lease over
//	busy <lease left>          409: the key is still leased by another shop
//	step <name> ran|replayed   a step ran and was checkpointed, or was replayed
//	charged <id> <replayed>    the provider answered the charge
//	stop <point>               the shop waits at point to be killed
//	paid <id> <status>         the buyer's answer, and once.Do's status
//
// At job.StopAt the shop stops and waits, until the demo kills it with
// SIGKILL (or its stdin closes, when the demo itself is gone).

// shopEnv names the environment variable that makes the program a shop
// process: its value is a shopJob in JSON.
const shopEnv = "PAYMENTS_SHOP_JOB"

// stepsLease is the lease of a shop process's claim: the key of a killed
// shop is taken over once this has passed since its last renewal.
const stepsLease = time.Second

// Where a shop stops to be killed.
const (
	// stopChargeSent: the provider made the charge, and the charge step's
	// checkpoint is not written.
	stopChargeSent = "charge-sent"
	// stopChargeCheckpointed: the charge step is checkpointed, and the
	// order row is not written.
	stopChargeCheckpointed = "charge-checkpointed"
)

// shopJob is what the demo asks of a shop process: pay Order.
type shopJob struct {
	Store     exstore.Config
	Provider  string // the provider's URL
	Warehouse string // the warehouse's URL
	Order     string
	StopAt    string // stopChargeSent, stopChargeCheckpointed, or "": never
}

// shopMain runs the shop process of the JSON job js and returns its exit
// code.
func shopMain(js string) int {
	var job shopJob
	if err := json.Unmarshal([]byte(js), &job); err != nil {
		fmt.Fprintln(os.Stderr, "payments shop:", err)
		return 2
	}
	if err := runShop(context.Background(), job, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "payments shop:", err)
		return 1
	}
	return 0
}

// stepShop is a shop process: it tells the demo its events on out.
type stepShop struct {
	job     shopJob
	payrail *payrail
	orders  orderTable
	mu      sync.Mutex
	out     io.Writer
}

func (s *stepShop) say(event string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintln(s.out, append([]any{event}, args...)...)
}

// stopAt waits to be killed if the job stops at point.
func (s *stepShop) stopAt(point string) {
	if s.job.StopAt != point {
		return
	}
	s.say("stop", point)
	_, _ = io.Copy(io.Discard, os.Stdin) // until SIGKILL, or the demo is gone
	os.Exit(3)
}

// observe tells the demo of the takeover and of each step's checkpoint
// or replay, from once's events.
func (s *stepShop) observe(_ context.Context, e once.Event) {
	switch {
	case e.Kind == once.EventClaimed && e.TookOver:
		s.say("took-over")
	case e.Kind == once.EventStep && e.Op == "checkpoint":
		s.say("step", e.Step, "ran")
	case e.Kind == once.EventStepReplayed:
		s.say("step", e.Step, "replayed")
	}
}

func runShop(ctx context.Context, job shopJob, w io.Writer) error {
	store, closeStore, err := exstore.Open(ctx, job.Store)
	if err != nil {
		return err
	}
	defer closeStore()
	s := &stepShop{job: job, payrail: newPayrail(job.Provider, nil), orders: openOrders(store, job.Store), out: w}
	keeper := once.New(store, once.RegisterError[*decline]("card_declined"), once.WithLease(stepsLease), once.WithObserver(s.observe))
	req := chargeRequest{OrderID: job.Order, Amount: 4200, Card: "4242424242424242"}
	fp := hashers.Strings("pay", req.OrderID, fmt.Sprint(req.Amount), req.Card)
	for attempt := 1; ; attempt++ {
		out, err := once.DoOutcome(ctx, keeper.Scope("buyer-42"), buyerKeyOf(job.Order), fp, func(ctx context.Context) (charge, error) {
			return s.placeOrder(ctx, req)
		})
		var busy *once.InProgressError
		if errors.As(err, &busy) && attempt < 50 {
			s.say("busy", busy.LeaseRemaining.Round(time.Millisecond))
			time.Sleep(max(busy.RetryAfter, 10*time.Millisecond))
			continue
		}
		if err != nil {
			return err
		}
		s.say("paid", out.Value.ID, out.Status)
		return nil
	}
}

// placeOrder is the shop's order as three steps: hold the stock, charge
// the card, write the order row. Each is checkpointed in the buyer's
// record, so a later execution of the intent runs only the steps not yet
// checkpointed. The hold and the charge are calls to other services: a
// once.Step runs them at least once (again if the shop dies after the
// call and before the checkpoint), so each carries a DerivedKey that the
// service deduplicates. The order row is a database write: on a SQL store
// it commits with its checkpoint (once.StepTx), exactly once.
func (s *stepShop) placeOrder(ctx context.Context, req chargeRequest) (charge, error) {
	id := req.OrderID
	_, err := once.Step(ctx, "hold", func(ctx context.Context) (string, error) {
		key := once.DerivedKey("hold", id)
		return key, holdStock(ctx, s.job.Warehouse, key, id)
	})
	if err != nil {
		return charge{}, err
	}
	c, err := once.Step(ctx, "charge", func(ctx context.Context) (charge, error) {
		c, replayed, err := s.payrail.charge(ctx, once.DerivedKey("order", id), req)
		if err == nil {
			s.say("charged", c.ID, replayed)
			s.stopAt(stopChargeSent)
		}
		return c, err
	})
	if err != nil {
		return charge{}, err
	}
	s.stopAt(stopChargeCheckpointed)
	return c, s.orders.write(ctx, id, c.ID)
}
