// Command httpapi is the seed's POST /orders service behind the oncehttp
// middleware: a browser's retry of an order gets the first response
// replayed (Idempotent-Replayed: true) instead of a second order; a retry
// while the first request still runs gets 409 Problem Details with
// Retry-After; the same key on another order gets 422.
//
//	go run ./examples/httpapi                      # listens on 127.0.0.1:8080
//	go run ./examples/httpapi -store postgres      # or -store redis; -addr :9090
//
// The caller is identified by "Authorization: Bearer <user>" (the token is
// the user id, a stand-in for real authentication) and that user is the
// scope of the keys; a request without it gets 401. A card ending in 0002 is
// declined with a 402 problem, which is stored and replayed like a 201. The
// header "X-Simulate: slow" makes the order take 3 seconds, long enough to
// send the duplicate that gets a 409. examples/README.md has a curl session.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/examples/internal/exstore"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "address to listen on")
	cfg := exstore.RegisterFlags(flag.CommandLine, exstore.Memory)
	flag.Parse()
	cfg.Name, cfg.Drop = exstore.Unique("httpapi"), true
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, *addr, *cfg); err != nil {
		fmt.Fprintln(os.Stderr, "httpapi:", err)
		os.Exit(1)
	}
}

// serve runs the service on addr until ctx ends.
func serve(ctx context.Context, addr string, cfg exstore.Config) error {
	store, closeStore, err := exstore.Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer closeStore()
	h, _, err := newServer(once.New(store), 3*time.Second)
	if err != nil {
		return err
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: logRequests(h), ReadHeaderTimeout: 5 * time.Second}
	log.Printf("listening on http://%s, store: %s", ln.Addr(), cfg)
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// logRequests logs one line per request: what a duplicate got is the point.
func logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(sw, r)
		log.Printf("%s %s key=%q -> %d replayed=%v", r.Method, r.URL.Path,
			r.Header.Get("Idempotency-Key"), sw.status, sw.Header().Get("Idempotent-Replayed") == "true")
	})
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	w.status = status
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
