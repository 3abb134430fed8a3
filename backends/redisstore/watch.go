package redisstore

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Watch implements backends.Watcher with Redis Pub/Sub. Complete, Release
// and Resolve publish on a channel named like the record's key (PUBLISH,
// or SPUBLISH on a Cluster, where the channel lives in the record's slot,
// served by the record's primary). Publishing is always on: with nobody
// subscribed it costs the server about 0.14 µs, against about 9 µs for
// the script that calls it. Watch subscribes on a dedicated
// connection and returns only after the server confirmed the subscription,
// so no change made after it returned is missed. The channel is also
// closed, as a spurious wake-up, when the subscription's connection fails.
// Call stop to release the connection; stop is idempotent.
func (s *Store) Watch(ctx context.Context, scope, key string) (<-chan struct{}, func(), error) {
	const op = "watch"
	if err := ctx.Err(); err != nil {
		return nil, nil, translate(ctx, op, err)
	}
	channel := s.key(scope, key)
	var ps *redis.PubSub
	if s.sharded {
		ps = s.client.SSubscribe(ctx, channel)
	} else {
		ps = s.client.Subscribe(ctx, channel)
	}
	for {
		msg, err := ps.Receive(ctx)
		if err != nil {
			_ = ps.Close()
			return nil, nil, translate(ctx, op, err)
		}
		if _, ok := msg.(*redis.Subscription); ok {
			break
		}
	}
	changed := make(chan struct{})
	go func() {
		defer close(changed)
		for {
			// A context would be kept past Watch's return; stop ends
			// this loop by closing the connection instead.
			msg, err := ps.Receive(context.Background())
			if err != nil {
				return
			}
			switch msg.(type) {
			case *redis.Message, *redis.Subscription:
				// A notification, or the server dropping the
				// subscription (a Cluster slot moved): wake up.
				return
			}
		}
	}()
	var once sync.Once
	stop := func() { once.Do(func() { _ = ps.Close() }) }
	return changed, stop, nil
}
