// Command webhook receives a payment provider's webhooks, which arrive at
// least once: the same event is delivered twice, redelivered after a
// failure, and forged without a valid signature. Each event is processed
// exactly once; duplicates are acknowledged without reprocessing; a forged
// delivery is refused before its event ID is claimed.
//
//	go run ./examples/webhook
//	go run ./examples/webhook -store postgres   # or -store redis
//
// The event ID is the key and the provider's endpoint the scope. With
// -store postgres or -store redis the records are shared, so any number of
// receiver instances behind a load balancer process each event once.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/examples/internal/exstore"
)

func main() {
	cfg := exstore.RegisterFlags(flag.CommandLine, exstore.Memory)
	flag.Parse()
	cfg.Name, cfg.Drop = exstore.Unique("webhook"), true
	if err := run(context.Background(), os.Stdout, *cfg); err != nil {
		fmt.Fprintln(os.Stderr, "webhook:", err)
		os.Exit(1)
	}
}

type delivery struct {
	what     string
	ev       event
	forged   bool
	parallel int // deliveries sent at once
}

// run delivers the events to a receiver on the store of cfg and checks that
// each was processed once.
func run(ctx context.Context, w io.Writer, cfg exstore.Config) error {
	store, closeStore, err := exstore.Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer closeStore()
	fmt.Fprintln(w, "store:", cfg)
	secret := []byte("whsec_demo")
	rc := &receiver{
		secret:    secret,
		keeper:    once.New(store),
		failOnce:  map[string]bool{"evt_3": true},
		processed: map[string]int{},
		failed:    map[string]bool{},
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: rc, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	url := "http://" + ln.Addr().String() + "/webhooks/payrail"

	send := func(ev event, forged bool) (int, string, error) {
		body, _ := json.Marshal(ev)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return 0, "", err
		}
		sig := sign(secret, body)
		if forged {
			sig = sign([]byte("not-the-secret"), body)
		}
		req.Header.Set("Webhook-Signature", sig)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(bytes.TrimSpace(b)), nil
	}

	deliveries := []delivery{
		{what: "payment.succeeded, delivered twice in a row", ev: event{"evt_1", "paid", "9b1e4d3a"}, parallel: 1},
		{what: "payment.succeeded, delivered 4 times at once", ev: event{"evt_2", "paid", "5c2f7e10"}, parallel: 4},
		{what: "refund.created, first processing fails, provider redelivers", ev: event{"evt_3", "refunded", "e8a0b6c4"}, parallel: 1},
		{what: "a forged delivery of evt_4, then the real one", ev: event{"evt_4", "paid", "71d3f9a2"}, forged: true, parallel: 1},
	}
	for _, d := range deliveries {
		fmt.Fprintf(w, "%s:\n", d.what)
		if d.forged {
			status, body, err := send(d.ev, true)
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "  forged: %d %s\n", status, body)
		}
		rounds := 2
		if d.parallel > 1 {
			rounds = 1
		}
		for range rounds {
			var mu sync.Mutex
			var wg sync.WaitGroup
			var lines []string
			for range d.parallel {
				wg.Add(1)
				go func() {
					defer wg.Done()
					status, body, err := send(d.ev, false)
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						lines = append(lines, "error: "+err.Error())
						return
					}
					lines = append(lines, fmt.Sprintf("%d %s", status, body))
				}()
			}
			wg.Wait()
			for _, l := range lines {
				fmt.Fprintf(w, "  delivery: %s\n", l)
			}
		}
	}

	fmt.Fprintln(w, "processings per event:")
	for _, d := range deliveries {
		n := rc.count(d.ev.ID)
		fmt.Fprintf(w, "  %s: %d\n", d.ev.ID, n)
		if n != 1 {
			return fmt.Errorf("event %s processed %d times", d.ev.ID, n)
		}
	}
	return nil
}
