package postgres

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/internal/pgsql"
)

// Waiting: Complete, Hold, Release, Resolve and Delete call pg_notify in the
// statement itself (no extra round trip), on one channel per table, with a
// 16-byte hash of (scope, key) as payload, and only when some session
// waits on a key of the same lock slot: a listener holds a shared advisory
// lock on each slot of its waiters' keys, which the writing statement
// tries to take (internal/pgsql documents the scheme and why: a notifying
// commit cannot share its WAL flush with others). A
// notification is delivered when the writing transaction commits, so a
// completion in a transaction (once.DoTx) wakes the waiters at its commit.
//
// Waiters share one connection: a Store whose DB can lend a connection
// (a *pgxpool.Pool, or a wrapper with its Acquire method) takes one out of
// the pool (pgxpool's Hijack) when the first waiter arrives, LISTENs on
// the table's channel, and fans every notification out to the waiters of
// its key. It keeps the connection while anybody waits and listenIdle
// after the last one left (so that bursts of waiters do not connect each
// time), then closes it. A Store therefore adds at most one server
// connection for all its waiters, outside the pool's MaxConns; the pool
// neither counts it nor waits for it on Close.
//
// The connection is pinged after listenPing without a notification; when
// it fails (the server restarted, the backend was terminated) every waiter
// is woken, re-checks its record, and the next Watch takes a fresh
// connection. A waiter also re-checks at its owner's lease end and on
// the core's fallback poll (every 2 s), which covers a notification lost
// any other way.
//
// Close retires the session and waits for its goroutine (see Store.Close).

// Timing of the listening connection.
const (
	listenIdle    = 5 * time.Second
	listenPing    = 30 * time.Second
	listenTimeout = 10 * time.Second // connect+LISTEN, ping, slot locks
	// lockRetry is how soon a slot lock held by an uncommitted writer is
	// tried again; slotWait bounds how long Watch waits for it, from the
	// first try that found it held, before it gives up (the core then
	// polls that step). A try that has not answered yet (a slow server)
	// does not count: Watch then waits for it, within its context.
	lockRetry = 5 * time.Millisecond
	slotWait  = 250 * time.Millisecond
)

// errSlotBusy is Watch's error when a concurrent uncommitted transaction
// kept the key's slot for longer than slotWait after a try found it held.
var errSlotBusy = errors.New("the key's lock slot is held by an uncommitted writer")

// ErrWatchUnsupported is returned by Store.Watch when the Store's DB cannot
// lend a dedicated connection to LISTEN on: a *pgx.Conn, a DB used with
// Config.SingleConnection, or a wrapper without an
// Acquire(context.Context) (*pgxpool.Conn, error) method. The core then
// waits by polling with backoff (10 ms doubling to 500 ms), as for any
// store without a Watcher.
var ErrWatchUnsupported = errors.New("once/postgres: waiting without polling needs a DB that can lend a connection (a *pgxpool.Pool)")

var _ backends.Watcher = (*Store)(nil)

// acquirer is a DB that lends connections: a *pgxpool.Pool.
type acquirer interface {
	Acquire(ctx context.Context) (*pgxpool.Conn, error)
}

// Watch implements backends.Watcher. It returns once the Store's shared
// connection listens on the table's channel and holds the lock of the
// key's slot (after the slot's uncommitted writers committed), so no
// change committed after Watch returned is missed. It gives up with an
// *Error 250 ms after a try of the slot's lock found it held, if a
// concurrent uncommitted transaction keeps writing to the slot (the core
// polls instead); a try that has not answered yet (a slow server) is
// waited for, within ctx. The channel is also
// closed, as a spurious wake-up, when the shared connection fails (the
// waiter re-checks and watches again on a fresh connection). Call stop to
// stop waiting; stop is idempotent. Without a connection to lend (see
// ErrWatchUnsupported) Watch returns that error at once, without I/O.
// After Close, and in a Watch that Close interrupts, it returns an *Error
// that wraps backends.ErrClosed.
func (s *Store) Watch(ctx context.Context, scope, key string) (<-chan struct{}, func(), error) {
	const op = "watch"
	if s.listen == nil {
		return nil, nil, ErrWatchUnsupported
	}
	if err := checkNames(op, scope, key); err != nil {
		return nil, nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, translateWatch(op, err)
	}
	payload, slotOf := pgsql.Payload(scope, key), pgsql.Slot(scope, key)
	for attempt := 0; ; attempt++ {
		ch, stop, err := s.listen.watch(ctx, payload, slotOf)
		var lost *lostConnection
		if errors.As(err, &lost) && attempt == 0 {
			continue // the shared connection failed just now: once on a fresh one
		}
		if err != nil {
			return nil, nil, translateWatch(op, err)
		}
		return ch, stop, nil
	}
}

// lostConnection is the error of a session whose connection failed (or
// could not be made) while a Watch waited for it.
type lostConnection struct{ err error }

func (e *lostConnection) Error() string { return e.err.Error() }
func (e *lostConnection) Unwrap() error { return e.err }

// translateWatch returns err as the *Error of op (see interpretError).
func translateWatch(op string, err error) error {
	if errors.Is(err, errSlotBusy) {
		return &Error{Op: op, kind: errSlotBusy.Error()}
	}
	if errors.Is(err, backends.ErrClosed) {
		return &Error{Op: op, kind: "store closed", cause: backends.ErrClosed}
	}
	_, e := interpretError(op, err)
	return e
}

// listener is a Store's shared listening connection, made on demand.
type listener struct {
	pool         acquirer
	listen       string // the LISTEN statement
	lock, unlock string // the statements taking and releasing slot locks
	idle, ping   time.Duration
	mu           sync.Mutex
	current      *session       // nil, or the live (or connecting) session
	closed       bool           // Close was called: no new session starts
	running      sync.WaitGroup // the sessions' goroutines (run)
}

func newListener(db DB, single bool, table string) *listener {
	pool, ok := db.(acquirer)
	if !ok || single {
		return nil
	}
	space := strings.NewReplacer("{lockspace}", pgsql.LockSpaceLiteral(table), "{channel}", pgsql.Channel(table))
	return &listener{
		pool:   pool,
		listen: space.Replace(pgsql.Listen),
		lock:   space.Replace(pgsql.LockSlots),
		unlock: space.Replace(pgsql.UnlockSlots),
		idle:   listenIdle,
		ping:   listenPing,
	}
}

// session is one listening connection and the waiters it serves.
type session struct {
	l      *listener
	ready  chan struct{} // closed once LISTEN succeeded or failed
	err    error         // why the session failed before it was ready, or while a slot was being locked
	cancel context.CancelFunc
	pid    uint32 // the server process, once connected (for tests)

	// Guarded by l.mu.
	dead    bool
	waiters map[string]map[*waiter]struct{} // by payload
	count   int
	slots   map[int]*slot // the slots of the waiters' keys
	dirty   bool          // slots changed since the loop last locked them
	kick    context.CancelFunc
	idle    *time.Timer

	held map[int]bool // slots whose lock the connection holds; the loop's own
}

// slot is a lock slot some waiters' keys fall in.
type slot struct {
	waiters int
	ready   chan struct{} // closed once its lock is held, or the session died
	locked  bool          // ready is closed
	refused chan struct{} // closed once a try found the lock held by a writer
	busy    bool          // refused is closed
}

type waiter struct {
	ch   chan struct{}
	slot int
}

func (l *listener) watch(ctx context.Context, payload string, slotOf int) (<-chan struct{}, func(), error) {
	w := &waiter{ch: make(chan struct{}), slot: slotOf}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, nil, backends.ErrClosed
	}
	s := l.current
	if s == nil {
		s = l.start()
	}
	slotReady, slotRefused := s.add(payload, w)
	l.mu.Unlock()
	stop := sync.OnceFunc(func() { s.remove(payload, w) })
	select {
	case <-s.ready:
	case <-ctx.Done():
		stop()
		return nil, nil, ctx.Err()
	}
	select {
	case <-slotReady:
	case <-slotRefused:
		// A writer holds the slot: wait slotWait for its commit.
		busy := time.NewTimer(slotWait)
		defer busy.Stop()
		select {
		case <-slotReady:
		case <-busy.C:
			stop()
			return nil, nil, errSlotBusy
		case <-ctx.Done():
			stop()
			return nil, nil, ctx.Err()
		}
	case <-ctx.Done():
		stop()
		return nil, nil, ctx.Err()
	}
	l.mu.Lock()
	err := s.err
	l.mu.Unlock()
	if errors.Is(err, backends.ErrClosed) {
		stop()
		return nil, nil, err
	}
	if err != nil {
		stop()
		return nil, nil, &lostConnection{err}
	}
	return w.ch, stop, nil
}

// start begins a session; l.mu is held.
func (l *listener) start() *session {
	ctx, cancel := context.WithCancel(context.Background())
	s := &session{
		l: l, ready: make(chan struct{}), cancel: cancel,
		waiters: map[string]map[*waiter]struct{}{}, slots: map[int]*slot{}, held: map[int]bool{},
	}
	l.current = s
	l.running.Add(1)
	go func() {
		defer l.running.Done()
		s.run(ctx)
	}()
	return s
}

// close retires the current session, so that its waiters wake and a
// Watch waiting for it returns backends.ErrClosed, makes every later
// Watch return that error, and waits until the goroutine of every session
// (the current one, and retired ones still closing their connection)
// has returned. It is safe to call more than once and concurrently.
func (l *listener) close() {
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		if s := l.current; s != nil {
			s.err = backends.ErrClosed
			s.retireLocked()
			s.readyLocked()
			s.cancel()
		}
	}
	l.mu.Unlock()
	l.running.Wait()
}

// add registers w and returns its slot's channels: ready, closed once the
// slot is locked, and refused, closed once a try found it held by a
// writer; l.mu is held.
func (s *session) add(payload string, w *waiter) (ready, refused <-chan struct{}) {
	s.stopIdleLocked()
	ws := s.waiters[payload]
	if ws == nil {
		ws = map[*waiter]struct{}{}
		s.waiters[payload] = ws
	}
	ws[w] = struct{}{}
	s.count++
	sl := s.slots[w.slot]
	if sl == nil {
		sl = &slot{ready: make(chan struct{}), refused: make(chan struct{})}
		s.slots[w.slot] = sl
		s.kickLocked()
	}
	sl.waiters++
	return sl.ready, sl.refused
}

// leftLocked accounts for a waiter that left its slot, woken or stopped.
func (s *session) leftLocked(w *waiter) {
	s.count--
	if sl := s.slots[w.slot]; sl != nil {
		if sl.waiters--; sl.waiters == 0 {
			delete(s.slots, w.slot)
			s.kickLocked()
		}
	}
}

// kickLocked makes the loop lock or unlock slots.
func (s *session) kickLocked() {
	s.dirty = true
	if s.kick != nil {
		s.kick()
	}
}

func (s *session) remove(payload string, w *waiter) {
	s.l.mu.Lock()
	defer s.l.mu.Unlock()
	ws := s.waiters[payload]
	if _, ok := ws[w]; !ok {
		return // woken already
	}
	delete(ws, w)
	if len(ws) == 0 {
		delete(s.waiters, payload)
	}
	s.leftLocked(w)
	s.idleLocked()
}

// idleLocked ends the session listenIdle after its last waiter left,
// unless one arrives meanwhile.
func (s *session) idleLocked() {
	if s.count > 0 || s.dead || s.idle != nil {
		return
	}
	// Close waits for the timer's function too, as for a session's
	// goroutine: it counts in running until it ran or was stopped.
	s.l.running.Add(1)
	s.idle = time.AfterFunc(s.l.idle, func() {
		defer s.l.running.Done()
		s.l.mu.Lock()
		defer s.l.mu.Unlock()
		if s.count == 0 && !s.dead {
			s.retireLocked()
			s.cancel()
		}
	})
}

// retireLocked makes the session take no new waiter and wakes its own.
func (s *session) retireLocked() {
	s.dead = true
	if s.l.current == s {
		s.l.current = nil
	}
	for _, ws := range s.waiters {
		for w := range ws {
			close(w.ch)
		}
	}
	for _, sl := range s.slots {
		if !sl.locked {
			sl.locked = true
			close(sl.ready)
		}
	}
	s.waiters, s.slots, s.count = nil, nil, 0
	s.stopIdleLocked()
}

// stopIdleLocked stops the idle timer, if any; l.mu is held.
func (s *session) stopIdleLocked() {
	if s.idle != nil && s.idle.Stop() {
		s.l.running.Done() // the timer's function will not run
	}
	s.idle = nil
}

// notified wakes the waiters of payload.
func (s *session) notified(payload string) {
	s.l.mu.Lock()
	defer s.l.mu.Unlock()
	ws := s.waiters[payload]
	if ws == nil {
		return
	}
	for w := range ws {
		close(w.ch)
		s.leftLocked(w)
	}
	delete(s.waiters, payload)
	s.idleLocked()
}

// fail retires the session after its connection failed; a waiter still
// in Watch returns err.
func (s *session) fail(err error) {
	s.l.mu.Lock()
	defer s.l.mu.Unlock()
	if s.dead {
		return
	}
	s.err = err
	s.retireLocked()
	s.readyLocked()
}

// readyLocked closes s.ready unless it is closed already; l.mu is held.
func (s *session) readyLocked() {
	select {
	case <-s.ready:
	default:
		close(s.ready)
	}
}

// run owns the connection: it takes it, listens, locks the waiters' slots
// and dispatches notifications until the session is retired or the
// connection fails, then closes it (which releases its locks).
func (s *session) run(ctx context.Context) {
	defer s.cancel()
	conn, err := s.connect(ctx)
	if err != nil {
		s.fail(err)
		return
	}
	s.l.mu.Lock()
	s.readyLocked() // unless Close retired the session meanwhile
	s.l.mu.Unlock()
	if err := s.loop(ctx, conn); err != nil {
		s.fail(err)
	}
	cctx, cancel := context.WithTimeout(context.Background(), listenTimeout)
	_ = conn.Close(cctx)
	cancel()
}

// connect takes a connection out of the pool (Hijack: the pool neither
// counts it nor waits for it on Close) and listens on it.
func (s *session) connect(ctx context.Context) (*pgx.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, listenTimeout)
	defer cancel()
	pooled, err := s.l.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	conn := pooled.Hijack()
	if _, err := conn.Exec(ctx, s.l.listen); err != nil {
		_ = conn.Close(context.Background())
		return nil, err
	}
	s.pid = conn.PgConn().PID()
	return conn, nil
}

// loop returns nil once ctx ends (the session was retired), or the
// connection's error.
func (s *session) loop(ctx context.Context, conn *pgx.Conn) error {
	for {
		missing, err := s.lockSlots(ctx, conn)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		wait := s.l.ping
		if missing {
			wait = lockRetry
		}
		wctx, cancel := context.WithTimeout(ctx, wait)
		s.l.mu.Lock()
		kicked := s.dirty
		s.kick = cancel
		s.l.mu.Unlock()
		var n *pgconn.Notification
		err = context.Canceled
		if !kicked {
			n, err = conn.WaitForNotification(wctx)
		}
		s.l.mu.Lock()
		s.kick = nil
		kicked = kicked || s.dirty
		s.l.mu.Unlock()
		timedOut := wctx.Err() == context.DeadlineExceeded
		cancel()
		switch {
		case err == nil:
			s.notified(n.Payload)
			continue
		case ctx.Err() != nil:
			return nil
		case kicked || (timedOut && missing):
			continue // lock or unlock slots, then wait again
		case !timedOut:
			return err // the connection failed
		}
		// No notification for a while: check the connection is alive.
		pctx, cancel := context.WithTimeout(ctx, listenTimeout)
		err = conn.Ping(pctx)
		cancel()
		if err != nil && ctx.Err() == nil {
			return err
		}
	}
}

// lockSlots makes the slot locks the connection holds those of its
// waiters' keys, and marks the newly held ones ready. It never waits for
// a lock: it reports missing when a slot's writer has not committed yet.
func (s *session) lockSlots(ctx context.Context, conn *pgx.Conn) (missing bool, err error) {
	s.l.mu.Lock()
	s.dirty = false
	var lock, unlock []int32
	for i := range s.slots {
		if !s.held[i] {
			lock = append(lock, int32(i))
		}
	}
	for i := range s.held {
		if s.slots[i] == nil {
			unlock = append(unlock, int32(i))
		}
	}
	s.l.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, listenTimeout)
	defer cancel()
	if len(unlock) > 0 {
		if _, err := conn.Exec(ctx, s.l.unlock, unlock); err != nil {
			return false, err
		}
		for _, i := range unlock {
			delete(s.held, int(i))
		}
	}
	if len(lock) > 0 {
		got, err := lockedSlots(ctx, conn, s.l.lock, lock)
		if err != nil {
			return false, err
		}
		for _, i := range got {
			s.held[int(i)] = true
		}
		missing = len(got) < len(lock)
	}
	s.l.mu.Lock()
	defer s.l.mu.Unlock()
	var tried map[int]bool // the slots this call tried and did not get
	if missing {
		tried = make(map[int]bool, len(lock))
		for _, i := range lock {
			tried[int(i)] = true
		}
	}
	for i, sl := range s.slots {
		switch {
		case s.held[i] && !sl.locked:
			sl.locked = true
			close(sl.ready)
		case !s.held[i] && tried[i] && !sl.busy:
			sl.busy = true
			close(sl.refused)
		}
	}
	return missing, nil
}

func lockedSlots(ctx context.Context, conn *pgx.Conn, sql string, slots []int32) ([]int32, error) {
	rows, err := conn.Query(ctx, sql, slots)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int32])
}
