package faults

import (
	"context"
	"fmt"
	"time"
)

// Chaos loops: each kind of fault in turn, until the workers are done.

// pulse installs a toxic for d, then removes it.
func pulse(ctx context.Context, e *env, kind, typ, stream string, attrs map[string]any, d time.Duration) {
	name := fmt.Sprintf("%s-%d", typ, time.Now().UnixNano())
	if err := e.proxy.add(name, typ, stream, attrs); err != nil {
		e.c.t.Errorf("toxic %s: %v", typ, err)
		return
	}
	e.c.inject(kind)
	sleepCtx(ctx, d)
	e.proxy.remove(name)
}

// pgChaos: latency, connection resets, and pg_terminate_backend of every
// store session of the workers.
func pgChaos(ctx context.Context, e *env) {
	faults := []func(){
		func() {
			pulse(ctx, e, "latency 40±20ms", "latency", "downstream", map[string]any{"latency": 40, "jitter": 20}, 500*time.Millisecond)
		},
		func() {
			pulse(ctx, e, "TCP reset (reset_peer)", "reset_peer", "upstream", map[string]any{"timeout": 0}, 80*time.Millisecond)
		},
		func() {
			// The workers' sessions come and go (resets close them): try
			// for up to a second to find some.
			for range 20 {
				tag, err := e.pool.Exec(context.Background(),
					`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`, e.appName)
				if err != nil {
					e.c.t.Errorf("pg_terminate_backend: %v", err)
					return
				}
				if n := tag.RowsAffected(); n > 0 {
					e.c.inject("pg_terminate_backend")
					return
				}
				sleepCtx(ctx, 50*time.Millisecond)
			}
		},
	}
	for i := 0; ctx.Err() == nil; i++ {
		faults[i%len(faults)]()
		sleepCtx(ctx, 250*time.Millisecond)
	}
}

// redisChaos: latency, connection resets, CLIENT PAUSE, and a SIGKILL and
// restart of the (AOF, fsync always) server.
func redisChaos(ctx context.Context, e *env) {
	admin := newRedis(e.redis.addr())
	defer func() { _ = admin.Close() }()
	restarts := 0
	faults := []func(){
		func() {
			pulse(ctx, e, "latency 40±20ms", "latency", "downstream", map[string]any{"latency": 40, "jitter": 20}, 500*time.Millisecond)
		},
		func() {
			pulse(ctx, e, "TCP reset (reset_peer)", "reset_peer", "upstream", map[string]any{"timeout": 0}, 80*time.Millisecond)
		},
		func() {
			if err := admin.Do(context.Background(), "CLIENT", "PAUSE", "400", "ALL").Err(); err != nil {
				e.c.t.Errorf("CLIENT PAUSE: %v", err)
				return
			}
			e.c.inject("Redis CLIENT PAUSE 400ms")
		},
		func() {
			if restarts >= 2 {
				return
			}
			restarts++
			if err := e.redis.restart(); err != nil {
				e.c.t.Errorf("redis restart: %v", err)
				return
			}
			e.c.inject("Redis kill -9 + restart (AOF fsync always)")
		},
	}
	for i := 0; ctx.Err() == nil; i++ {
		faults[i%len(faults)]()
		sleepCtx(ctx, 250*time.Millisecond)
	}
}

// mysqlChaos: latency, connection resets, and connections dropped
// silently (the proxy swallows every byte, then closes the connection
// 100ms later), through the proxy in front of MariaDB.
func mysqlChaos(ctx context.Context, e *env) {
	faults := []func(){
		func() {
			pulse(ctx, e, "latency 40±20ms", "latency", "downstream", map[string]any{"latency": 40, "jitter": 20}, 500*time.Millisecond)
		},
		func() {
			pulse(ctx, e, "TCP reset (reset_peer)", "reset_peer", "upstream", map[string]any{"timeout": 0}, 80*time.Millisecond)
		},
		func() {
			pulse(ctx, e, "connection dropped (blackholed, closed after 100ms)", "timeout", "upstream", map[string]any{"timeout": 100}, 300*time.Millisecond)
		},
	}
	for i := 0; ctx.Err() == nil; i++ {
		faults[i%len(faults)]()
		sleepCtx(ctx, 250*time.Millisecond)
	}
}
