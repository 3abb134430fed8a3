package redisstore

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stagedoor/once/backends"
)

// Watching: Complete, Hold, Release, Resolve and Delete publish on a channel
// named like the record's key (PUBLISH, or SPUBLISH on a Cluster, where
// the channel lives in the record's slot, served by the record's primary).
// Publishing is always on: with nobody subscribed it is a small part of
// the script that calls it.
//
// Waiters share connections: a Store keeps one Pub/Sub connection (one
// per primary on a Cluster, since a shard channel is served by its slot's
// primary), subscribes each watched channel once whatever the number of
// its waiters, and fans every notification out to them. The number of
// Pub/Sub connections is therefore bounded by the number of primaries,
// whatever the number of waiters. A connection with nothing to watch is
// closed after subscriberIdle.
//
// Store.Close retires every connection and waits for every goroutine and
// timer function the subscribers started (subscribers.running).

// healthEvery is how often an idle subscriber connection is pinged; a ping
// left unanswered for as long again fails it (as go-redis's own health
// check does for PubSub.Channel).
const (
	healthEvery    = 30 * time.Second
	subscriberIdle = 5 * time.Second
)

// Watch implements backends.Watcher. It returns only after the server
// confirmed the subscription of the record's channel (or found it already
// confirmed for another waiter), so no change made after Watch returned
// is missed. The channel is also closed, as a spurious wake-up, when the
// shared connection fails (the waiter re-checks and watches again on a
// fresh connection) or the server drops the subscription (a Cluster slot
// moved). Call stop to stop waiting; stop is idempotent. After Close, and
// in a Watch that Close interrupts, it returns an *Error of kind
// backends.ErrClosed.
func (s *Store) Watch(ctx context.Context, scope, key string) (<-chan struct{}, func(), error) {
	const op = "watch"
	if err := ctx.Err(); err != nil {
		return nil, nil, translate(ctx, op, err)
	}
	if err := checkNames(op, scope, key); err != nil {
		return nil, nil, err
	}
	channel := s.key(scope, key)
	for attempt := 0; ; attempt++ {
		changed, stop, err := s.watchOnce(ctx, channel)
		if err != nil && ctx.Err() == nil && s.subs.isClosed() {
			// Whatever failed the attempt (the connection Close retired,
			// or one that failed meanwhile), the store is closed now.
			err = backends.ErrClosed
		}
		if errors.Is(err, errSubscriberClosed) && attempt == 0 {
			continue // the shared connection went idle or failed just now
		}
		if err != nil {
			return nil, nil, translate(ctx, op, err)
		}
		return changed, stop, nil
	}
}

func (s *Store) watchOnce(ctx context.Context, channel string) (<-chan struct{}, func(), error) {
	sc, err := s.subscriberFor(ctx, channel)
	if err != nil {
		return nil, nil, err
	}
	w := &waiter{ch: make(chan struct{})}
	ready, err := sc.add(ctx, channel, w)
	if err != nil {
		return nil, nil, err
	}
	stop := sync.OnceFunc(func() { sc.remove(channel, w) })
	select {
	case <-ready:
	case <-ctx.Done():
		stop()
		return nil, nil, ctx.Err()
	}
	if err := sc.confirmed(channel, w); err != nil {
		stop()
		return nil, nil, err
	}
	return w.ch, stop, nil
}

// subscribers holds a Store's shared Pub/Sub connections by primary
// address ("" for a single node or a Sentinel client).
type subscribers struct {
	mu     sync.Mutex
	conns  map[string]*subscriber
	closed bool // Close was called: no connection opens any more
	// running counts what the subscribers started and Close waits for:
	// each loop goroutine, each idle timer until its function returned or
	// it was stopped, each goroutine failing a connection, and a Close's
	// own retiring. Every Add but Close's happens while the subscriber's
	// loop is counted (it observed the subscriber live under its mu, and
	// a loop returns only after its subscriber was retired), so the
	// counter is never 0 then, as sync.WaitGroup requires of an Add
	// concurrent with Wait.
	running sync.WaitGroup
}

func (h *subscribers) isClosed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closed
}

// close retires every connection (waking its waiters; a Watch waiting for
// a confirmation returns backends.ErrClosed), makes every later Watch
// return backends.ErrClosed, and returns once every goroutine and timer
// function of every subscriber, including those of connections that
// failed or went idle before, has returned. It is safe to call more than
// once and concurrently.
func (h *subscribers) close() {
	h.mu.Lock()
	var conns []*subscriber
	first := !h.closed
	if first {
		h.closed = true
		for _, sc := range h.conns {
			conns = append(conns, sc)
		}
		h.conns = nil
		h.running.Add(1) // a concurrent Close waits for this one's retiring
	}
	h.mu.Unlock()
	if first {
		for _, sc := range conns {
			sc.fail(backends.ErrClosed)
		}
		h.running.Done()
	}
	h.running.Wait()
}

func (s *Store) subscriberFor(ctx context.Context, channel string) (*subscriber, error) {
	addr := ""
	var node *redis.Client
	if cc, ok := s.client.(*redis.ClusterClient); ok {
		var err error
		if node, err = cc.MasterForKey(ctx, channel); err != nil {
			return nil, err
		}
		addr = node.Options().Addr
	}
	h := &s.subs
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, backends.ErrClosed
	}
	if sc := h.conns[addr]; sc != nil && !sc.dead.Load() {
		return sc, nil
	}
	sc := &subscriber{
		owner:        h,
		addr:         addr,
		channels:     map[string]*watched{},
		skipConfirm:  map[string]int{},
		pendingUnsub: map[string]int{},
	}
	if node != nil {
		sc.ps = node.SSubscribe(ctx)
		sc.subscribe, sc.unsubscribe = sc.ps.SSubscribe, sc.ps.SUnsubscribe
	} else {
		sc.ps = s.client.Subscribe(ctx)
		sc.subscribe, sc.unsubscribe = sc.ps.Subscribe, sc.ps.Unsubscribe
	}
	if h.conns == nil {
		h.conns = map[string]*subscriber{}
	}
	h.conns[addr] = sc
	h.running.Add(1)
	go func() {
		defer h.running.Done()
		sc.loop()
	}()
	return sc, nil
}

var errSubscriberClosed = errors.New("subscriber connection closed")

// subscriber is one shared Pub/Sub connection and the waiters it serves.
type subscriber struct {
	owner *subscribers
	addr  string
	ps    *redis.PubSub

	subscribe, unsubscribe func(ctx context.Context, channels ...string) error

	dead atomic.Bool

	mu       sync.Mutex
	err      error               // why it died, when it did
	channels map[string]*watched // subscribed (or being subscribed) channels
	// skipConfirm counts subscribe confirmations still in flight for a
	// channel whose waiters all left before it arrived; pendingUnsub
	// counts our own unsubscribes not yet confirmed. Both keep the
	// stream of confirmations matched to the right request.
	skipConfirm  map[string]int
	pendingUnsub map[string]int
	idle         *time.Timer
}

// watched is one subscribed channel.
type watched struct {
	ready     chan struct{} // closed once confirmed, or when the connection dies
	confirmed bool
	waiters   map[*waiter]struct{}
}

type waiter struct {
	ch     chan struct{}
	closed bool
}

func (w *waiter) wake() {
	if !w.closed {
		w.closed = true
		close(w.ch)
	}
}

// add registers w on channel, subscribing it if it is new, and returns a
// channel closed once the subscription is confirmed.
func (sc *subscriber) add(ctx context.Context, channel string, w *waiter) (<-chan struct{}, error) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.dead.Load() {
		return nil, errSubscriberClosed
	}
	sc.stopIdleLocked()
	st := sc.channels[channel]
	if st == nil {
		st = &watched{ready: make(chan struct{}), waiters: map[*waiter]struct{}{}}
		if err := sc.subscribe(ctx, channel); err != nil {
			sc.idleLocked()
			return nil, err
		}
		sc.channels[channel] = st
	}
	st.waiters[w] = struct{}{}
	return st.ready, nil
}

// confirmed reports whether w's subscription is live, or why not.
func (sc *subscriber) confirmed(channel string, w *waiter) error {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if st := sc.channels[channel]; st != nil && st.confirmed {
		return nil
	}
	if w.closed {
		// Woken before the confirmation: the server dropped the channel
		// or the connection died.
		if sc.err != nil {
			return sc.err
		}
		return nil
	}
	return errSubscriberClosed
}

// remove unregisters w; the last waiter of a channel unsubscribes it.
func (sc *subscriber) remove(channel string, w *waiter) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	st := sc.channels[channel]
	if st == nil {
		return
	}
	if _, ok := st.waiters[w]; !ok {
		return
	}
	delete(st.waiters, w)
	if len(st.waiters) == 0 {
		sc.dropLocked(channel, st)
	}
}

// dropLocked unsubscribes a channel nobody waits on any more.
func (sc *subscriber) dropLocked(channel string, st *watched) {
	delete(sc.channels, channel)
	if sc.dead.Load() {
		return
	}
	if !st.confirmed {
		sc.skipConfirm[channel]++
	}
	sc.pendingUnsub[channel]++
	if err := sc.unsubscribe(context.Background(), channel); err != nil {
		// Not under sc.mu, which fail takes.
		sc.owner.running.Add(1)
		go func() {
			defer sc.owner.running.Done()
			sc.fail(err)
		}()
		return
	}
	sc.idleLocked()
}

// idleLocked closes the connection after subscriberIdle with nothing to
// watch; sc.mu is held.
func (sc *subscriber) idleLocked() {
	if len(sc.channels) > 0 || sc.idle != nil || sc.dead.Load() {
		return
	}
	// Close waits for the timer's function too: it counts in running until
	// it returned or was stopped (stopIdleLocked).
	sc.owner.running.Add(1)
	sc.idle = time.AfterFunc(subscriberIdle, func() {
		defer sc.owner.running.Done()
		sc.mu.Lock()
		empty := len(sc.channels) == 0
		sc.mu.Unlock()
		if empty {
			sc.fail(errSubscriberClosed)
		}
	})
}

// stopIdleLocked stops the idle timer, if any; sc.mu is held.
func (sc *subscriber) stopIdleLocked() {
	if sc.idle != nil && sc.idle.Stop() {
		sc.owner.running.Done() // its function will not run
	}
	sc.idle = nil
}

// loop reads the connection and dispatches notifications and
// confirmations until the connection fails or is closed.
func (sc *subscriber) loop() {
	pinged := false
	for {
		// A context would outlive Watch's caller; closing the PubSub ends
		// this loop instead.
		msg, err := sc.ps.ReceiveTimeout(context.Background(), healthEvery)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() && !pinged && !sc.dead.Load() {
				pinged = true
				if err := sc.ps.Ping(context.Background()); err == nil {
					continue
				}
			}
			sc.fail(err)
			return
		}
		pinged = false
		switch m := msg.(type) {
		case *redis.Message:
			sc.notified(m.Channel)
		case *redis.Subscription:
			switch m.Kind {
			case "subscribe", "ssubscribe":
				sc.confirm(m.Channel)
			case "unsubscribe", "sunsubscribe":
				sc.unsubscribed(m.Channel)
			}
		}
	}
}

func (sc *subscriber) notified(channel string) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	st := sc.channels[channel]
	if st == nil || !st.confirmed {
		return
	}
	for w := range st.waiters {
		w.wake()
	}
	sc.dropLocked(channel, st)
}

func (sc *subscriber) confirm(channel string) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.skipConfirm[channel] > 0 {
		if sc.skipConfirm[channel]--; sc.skipConfirm[channel] == 0 {
			delete(sc.skipConfirm, channel)
		}
		return
	}
	if st := sc.channels[channel]; st != nil && !st.confirmed {
		st.confirmed = true
		close(st.ready)
	}
}

func (sc *subscriber) unsubscribed(channel string) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.pendingUnsub[channel] > 0 {
		if sc.pendingUnsub[channel]--; sc.pendingUnsub[channel] == 0 {
			delete(sc.pendingUnsub, channel)
		}
		return
	}
	// The server dropped the subscription (a Cluster slot moved): wake
	// its waiters, who re-check and watch again.
	st := sc.channels[channel]
	if st == nil {
		return
	}
	delete(sc.channels, channel)
	for w := range st.waiters {
		w.wake()
	}
	if !st.confirmed {
		close(st.ready)
	}
	sc.idleLocked()
}

// fail retires the connection: every waiter is woken (a spurious wake-up:
// a change may have been published while it was down), and the next Watch
// opens a fresh connection.
func (sc *subscriber) fail(err error) {
	if sc.dead.Swap(true) {
		return
	}
	h := sc.owner
	h.mu.Lock()
	if h.conns[sc.addr] == sc {
		delete(h.conns, sc.addr)
	}
	h.mu.Unlock()
	sc.mu.Lock()
	sc.err = err
	for _, st := range sc.channels {
		for w := range st.waiters {
			w.wake()
		}
		if !st.confirmed {
			close(st.ready)
		}
	}
	sc.channels = map[string]*watched{}
	sc.stopIdleLocked()
	sc.mu.Unlock()
	_ = sc.ps.Close()
}
