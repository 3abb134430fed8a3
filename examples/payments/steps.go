package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/examples/internal/exstore"
)

// The steps part: the shop's order is three steps (once.Step, once.StepTx)
// in a shop process (shopproc.go) that the demo kills with SIGKILL in the
// middle of the order, then starts again for the buyer's retry.
//
//   - Killed after the charge's checkpoint: the retry replays the hold and
//     the charge from their checkpoints, and the provider is not called
//     again; the order row is written once.
//   - Killed after the provider charged, before the charge's checkpoint:
//     the retry runs the charge step again, and the provider replays the
//     charge it made for the DerivedKey: a step is at least once, and its
//     key makes it exactly once.
type stepsOrder struct {
	id     string
	stopAt string
	story  string
}

var stepsOrders = []stepsOrder{
	{id: "2b7d4e19", stopAt: stopChargeCheckpointed, story: "the shop is killed after the charge step's checkpoint, before the order row"},
	{id: "6a0c8f35", stopAt: stopChargeSent, story: "the shop is killed after the provider charged, before the charge step's checkpoint"},
}

// stepsResult is what the steps part counted for one order.
type stepsResult struct {
	Order string
	// Runs and Replays count, per step, the executions that ran it (and
	// checkpointed it) and those that replayed its checkpoint.
	Runs, Replays map[string]int
	// The effects: stock holds made and requests to the warehouse, charges
	// made and requests to the provider, order rows.
	Holds, HoldRequests, Charges, ChargeRequests, Rows int
	// ProviderReplays counts the charges the provider answered
	// Idempotent-Replayed: true.
	ProviderReplays int
	// Answers are the buyer's answers from each shop that was not killed:
	// the charge ID and once.Do's status.
	Answers []string
}

// runSteps plays stepsOrders on the store of cfg if it is durable, on a
// SQLite file otherwise, and fails unless each order was held, charged and
// written once.
func runSteps(ctx context.Context, w io.Writer, cfg exstore.Config) ([]stepsResult, error) {
	fmt.Fprintln(w, "\nsteps: the order is three steps, hold the stock (once.Step), charge the card (once.Step), write the order row; a shop process is killed (SIGKILL) mid-order and started again")
	if !cfg.Durable() {
		fmt.Fprintln(w, "memory keeps nothing across processes, so this part runs on SQLite (embedded, no server), in a temporary file")
		cfg.Kind, cfg.SQLitePath = exstore.SQLite, ""
	}
	store, closeStore, err := exstore.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer closeStore()
	orders := openOrders(store, cfg)
	if err := orders.create(ctx); err != nil {
		return nil, fmt.Errorf("orders table: %w", err)
	}
	defer func() { _ = orders.drop(context.WithoutCancel(ctx)) }()
	fmt.Fprintln(w, "shop's store:", cfg)
	fmt.Fprintln(w, "order rows:", orders)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	prov, wh := newProvider(nil, 0), newWarehouse()
	provURL, err := prov.serve(ctx)
	if err != nil {
		return nil, err
	}
	whURL, err := serveShop(ctx, wh)
	if err != nil {
		return nil, err
	}
	shopCfg := cfg
	shopCfg.Drop = false // the demo drops the records, at the end
	var results []stepsResult
	for _, o := range stepsOrders {
		res := stepsResult{Order: o.id, Runs: map[string]int{}, Replays: map[string]int{}}
		fmt.Fprintf(w, "\norder %s: %s\n", o.id, o.story)
		for n, stopAt := range []string{o.stopAt, "", ""} {
			switch n {
			case 1:
				fmt.Fprintln(w, "  the buyer retries with "+buyerKeyOf(o.id)+"; a new shop process takes the order")
			case 2:
				fmt.Fprintln(w, "  the buyer's browser sends the order once more (a reload)")
			}
			job := shopJob{Store: shopCfg, Provider: provURL, Warehouse: whURL, Order: o.id, StopAt: stopAt}
			if err := runShopProcess(ctx, job, func(ev []string) { tell(w, fmt.Sprintf("shop %d", n+1), ev, orders, &res) }); err != nil {
				return nil, fmt.Errorf("shop %d of order %s: %w", n+1, o.id, err)
			}
		}
		res.Holds, res.HoldRequests = wh.counts(o.id)
		res.Charges, res.ChargeRequests = prov.counts(o.id)
		n, ok, err := orders.count(ctx, o.id)
		if err != nil {
			return nil, err
		}
		if !ok {
			n = res.Runs["order"] // the rows the shops wrote in their processes
		}
		res.Rows = n
		results = append(results, res)
	}
	return results, stepsReport(w, results, orders)
}

// tell prints one event of shop, and counts it in res.
func tell(w io.Writer, shop string, ev []string, orders orderTable, res *stepsResult) {
	arg := func(i int) string {
		if i < len(ev) {
			return ev[i]
		}
		return ""
	}
	switch arg(0) {
	case "took-over":
		fmt.Fprintf(w, "  %s: took over the killed shop's claim (its lease ran out)\n", shop)
	case "busy":
		fmt.Fprintf(w, "  %s: 409 in progress: the killed shop's claim is leased for %s more; the buyer waits and retries\n", shop, arg(1))
	case "charged":
		if arg(2) == "true" {
			res.ProviderReplays++
			fmt.Fprintf(w, "  %s: step charge: ran again: the provider replayed %s for %s (Idempotent-Replayed: true): no second charge\n", shop, arg(1), once.DerivedKey("order", res.Order))
		} else {
			fmt.Fprintf(w, "  %s: step charge: ran: the provider charged %s (Idempotency-Key %s)\n", shop, arg(1), once.DerivedKey("order", res.Order))
		}
	case "step":
		name := arg(1)
		if arg(2) == "replayed" {
			res.Replays[name]++
			fmt.Fprintf(w, "  %s: step %s: replayed from its checkpoint, not run\n", shop, name)
			return
		}
		res.Runs[name]++
		switch {
		case name == "hold":
			fmt.Fprintf(w, "  %s: step hold: ran: the warehouse holds the stock (Idempotency-Key %s); checkpointed\n", shop, once.DerivedKey("hold", res.Order))
		case name == "charge":
			fmt.Fprintf(w, "  %s: step charge: checkpointed\n", shop)
		case isSQL(orders):
			fmt.Fprintf(w, "  %s: step %s: ran: the row committed in one transaction with the step's checkpoint (StepTx)\n", shop, name)
		default:
			fmt.Fprintf(w, "  %s: step %s: ran: the row is in the shop process's table; checkpointed\n", shop, name)
		}
	case "stop":
		where := map[string]string{
			stopChargeSent:         "after the provider charged, before the charge step's checkpoint",
			stopChargeCheckpointed: "after the charge step's checkpoint, before the order row",
		}[arg(1)]
		if arg(1) == stopChargeSent {
			res.Runs["charge"]++ // it ran; its checkpoint never will be written
		}
		fmt.Fprintf(w, "  %s is killed (SIGKILL) %s\n", shop, where)
	case "paid":
		res.Answers = append(res.Answers, arg(1)+" "+strings.Join(ev[2:], " "))
		fmt.Fprintf(w, "  %s: the buyer gets: paid %s (once.Do: %s)\n", shop, arg(1), strings.Join(ev[2:], " "))
	default:
		fmt.Fprintf(w, "  %s: %s\n", shop, strings.Join(ev, " "))
	}
}

// shopTimeout bounds a shop process: past it, it is killed and the part
// fails.
const shopTimeout = time.Minute

func isSQL(orders orderTable) bool {
	_, ok := orders.(*sqlOrders)
	return ok
}

// runShopProcess runs job in a shop process, a new process of this very
// program, and hands each event it prints to onEvent. When the shop says
// it stopped, runShopProcess kills it with SIGKILL.
func runShopProcess(ctx context.Context, job shopJob, onEvent func([]string)) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	js, err := json.Marshal(job)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, shopTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = append(os.Environ(), shopEnv+"="+string(js))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe() // open until the shop ends: a stopped shop waits on it
	if err != nil {
		return err
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	killed := false
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		ev := strings.Fields(sc.Text())
		onEvent(ev)
		if len(ev) > 0 && ev[0] == "stop" {
			killed = cmd.Process.Kill() == nil // SIGKILL: no deferred call, no release of the claim
		}
	}
	err = cmd.Wait()
	if killed {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// stepsReport prints the effects per step of each order and fails unless
// every order was held, charged and written once.
func stepsReport(w io.Writer, results []stepsResult, orders orderTable) error {
	rowsBy, rows := "once.StepTx", "%d order row"
	if !isSQL(orders) {
		rowsBy, rows = "once.Step", "%d order row (written in the shop processes)"
	}
	fmt.Fprintf(w, "\n%-10s %-7s %-12s %-8s %-8s %s\n", "order", "step", "written by", "fn runs", "replays", "effects")
	var errs []error
	for _, r := range results {
		row := func(step, by, effects string) {
			fmt.Fprintf(w, "%-10s %-7s %-12s %-8d %-8d %s\n", r.Order, step, by, r.Runs[step], r.Replays[step], effects)
		}
		row("hold", "once.Step", fmt.Sprintf("%d stock hold (warehouse requests: %d)", r.Holds, r.HoldRequests))
		row("charge", "once.Step", fmt.Sprintf("%d charge (provider requests: %d, replayed by the provider: %d)", r.Charges, r.ChargeRequests, r.ProviderReplays))
		row("order", rowsBy, fmt.Sprintf(rows, r.Rows))
		if r.Holds != 1 || r.Charges != 1 || r.Rows != 1 {
			errs = append(errs, fmt.Errorf("order %s: %d holds, %d charges, %d rows; want 1 of each", r.Order, r.Holds, r.Charges, r.Rows))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	fmt.Fprintf(w, "every order: 1 stock hold, 1 charge, 1 order row, over 3 shop processes of which one was killed\n")
	return nil
}
