package oncehttp

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/textproto"
	"slices"
	"strconv"
	"time"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/hashers"
)

// Middleware guards handlers with idempotency keys. It is safe for
// concurrent use and holds no per-request state; make one per Keeper and
// Config and wrap as many handlers as you like.
type Middleware struct {
	keeper        *once.Keeper
	scope         func(*http.Request) (string, error)
	header        string
	methods       []string
	allowMissing  bool
	fingerprint   func(*http.Request) (once.Fingerprint, error)
	maxStored     int
	maxOutcome    int // the Keeper's outcome cap for the middleware's calls
	allow         []string
	onServerError func(int) ServerErrorPolicy
	storeStatus   func(int) bool
	validateKey   func(string) error
	opts          []once.Option
	logger        *slog.Logger
	problems      problems
}

// New returns a Middleware that guards requests with k, configured by cfg.
// It returns a *ConfigError (errors.Is ErrInvalidConfig) and no Middleware
// when k is nil, cfg.Scope is nil (there is no insecure default), a field
// is out of range, or k's policy or cfg.Options hold an option the core
// refuses (once.WithWait(-1), a non-positive lease or retention...: Field
// "Keeper" or "Options"), with which every request would fail.
func New(k *once.Keeper, cfg Config) (*Middleware, error) {
	if k == nil {
		return nil, &ConfigError{Field: "Keeper", Reason: "nil"}
	}
	if cfg.Scope == nil {
		return nil, &ConfigError{Field: "Scope", Reason: "required: return the authenticated principal of the request"}
	}
	if cfg.MaxStoredBody < 0 {
		return nil, &ConfigError{Field: "MaxStoredBody", Reason: "negative"}
	}
	m := &Middleware{
		keeper:        k,
		scope:         cfg.Scope,
		header:        textproto.CanonicalMIMEHeaderKey(cfg.Header),
		methods:       slices.Clone(cfg.Methods),
		allowMissing:  cfg.AllowMissingKey,
		fingerprint:   cfg.Fingerprint,
		maxStored:     cfg.MaxStoredBody,
		allow:         storeList(cfg.StoreHeaders),
		onServerError: cfg.OnServerError,
		storeStatus:   cfg.StoreStatus,
		validateKey:   cfg.ValidateKey,
		logger:        cfg.Logger,
	}
	if cfg.Header == "" {
		m.header = DefaultHeader
	} else if !validFieldName(cfg.Header) {
		return nil, &ConfigError{Field: "Header", Reason: "not a valid header field name"}
	}
	if m.methods == nil {
		m.methods = slices.Clone(DefaultMethods)
	}
	if slices.Contains(m.methods, "") {
		return nil, &ConfigError{Field: "Methods", Reason: "empty method"}
	}
	if m.fingerprint == nil {
		maxBody := cfg.MaxBody
		if maxBody == 0 {
			maxBody = DefaultMaxBody
		}
		m.fingerprint = hashers.RequestHasher{MaxBody: maxBody, Query: hashers.QueryCanonical}.Hash
	}
	if m.maxStored == 0 {
		m.maxStored = DefaultMaxStoredBody
	}
	if m.onServerError == nil {
		m.onServerError = ReleaseOn(http.StatusServiceUnavailable)
	}
	if m.storeStatus == nil {
		m.storeStatus = DefaultStoreStatus
	}
	// The caller's options first; then the ones the middleware relies
	// on: its codec, an outcome cap that fits MaxStoredBody, no
	// classifier, so that its 5xx marker errors are released or held as
	// OnServerError says, and observers (added to the caller's) that tell
	// FirstExecution about takeovers and log store failures.
	m.maxOutcome = outcomeCap(m.maxStored)
	m.opts = append(slices.Clone(cfg.Options),
		once.WithCodec(responseCodec{}),
		once.WithMaxOutcomeSize(m.maxOutcome),
		once.WithClassifier(nil),
		once.WithObserver(tookOverObserver),
		once.WithObserver(storeFailureLogger(cfg.Logger)),
	)
	if err := checkPolicy(k, m.opts); err != nil {
		return nil, err
	}
	base := cfg.ProblemBase
	if base == "" {
		base = DefaultProblemBase
	}
	m.problems = newProblems(base, cfg.ProblemTypes)
	return m, nil
}

// configProbe is a value the middleware's codec refuses to encode (its
// JSON fails), so that checkPolicy's Resolve stops after validating the
// policy, before any store call.
type configProbe struct{}

var errConfigProbe = errors.New("oncehttp: the policy check's value is never stored")

func (configProbe) MarshalJSON() ([]byte, error) { return nil, errConfigProbe }

// checkPolicy reports a Keeper policy, or Options on top of it, that the
// core refuses (a negative wait, a non-positive lease...), with which
// every request would fail. It validates as every call does, with a
// Resolve that ends at encoding its value: nothing is sent to the store,
// traced or observed.
func checkPolicy(k *once.Keeper, opts []once.Option) error {
	const name = "oncehttp-config-check"
	check := func(s once.Scope) error {
		var invalid *once.InvalidInputError
		if err := once.Resolve(context.Background(), s, name, nil, configProbe{}, nil); errors.As(err, &invalid) {
			return invalid
		}
		return nil
	}
	if err := check(k.Scope(name).With(once.WithCodec(responseCodec{}))); err != nil {
		return &ConfigError{Field: "Keeper", Reason: "its options are invalid: " + err.Error()}
	}
	if err := check(k.Scope(name).With(opts...)); err != nil {
		return &ConfigError{Field: "Options", Reason: err.Error()}
	}
	return nil
}

// Handler returns next guarded by m. Its type fits routers that take
// func(http.Handler) http.Handler middleware: pass m.Handler.
//
// A request whose method is not guarded reaches next untouched. A guarded
// request reaches next at most once per (scope, key) within the Keeper's
// retention, with its body restored after fingerprinting and a context
// that is cancelled if the key's lease is lost; every other request with
// the key gets the stored response or a Problem Details answer (see the
// package documentation).
func (m *Middleware) Handler(next http.Handler) http.Handler {
	return m.guard(next, nil)
}

// doCall runs the guarded handler's fn once per key: once.DoOutcome, or, in
// a transaction (HandlerTx), once.DoTxOutcome.
type doCall func(ctx context.Context, scope once.Scope, key string, fp once.Fingerprint, fn func(context.Context) (storedResponse, error)) (once.Outcome[storedResponse], error)

// guard returns next guarded by m, its calls made by inTx (nil: by
// once.DoOutcome, outside a transaction).
func (m *Middleware) guard(next http.Handler, inTx doCall) http.Handler {
	if next == nil {
		panic("oncehttp: nil handler")
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.serve(next, inTx, w, r)
	})
}

func (m *Middleware) serve(next http.Handler, inTx doCall, w http.ResponseWriter, r *http.Request) {
	if !slices.Contains(m.methods, r.Method) {
		next.ServeHTTP(w, r)
		return
	}
	key, err := requestKey(r, m.header)
	switch {
	case errors.Is(err, errNoKey) && m.allowMissing:
		next.ServeHTTP(w, r)
		return
	case errors.Is(err, errNoKey):
		m.problems.write(w, probMissingKey, 0)
		return
	case err != nil:
		m.problems.write(w, probInvalidKey, 0)
		return
	}
	if m.validateKey != nil && m.validateKey(key) != nil {
		m.problems.write(w, probInvalidKey, 0)
		return
	}
	name, err := m.scope(r)
	if err != nil || name == "" {
		m.problems.writeScope(w, scopeStatus(err))
		return
	}
	fp, err := m.fingerprint(r)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.Is(err, hashers.ErrBodyTooLarge) || errors.As(err, &tooLarge) {
			m.problems.write(w, probBodyTooLarge, 0)
		} else {
			m.problems.write(w, probInvalidBody, 0)
		}
		return
	}

	var rec *recorder
	var panicked *handlerPanic
	g := &guarded{key: key, scope: name, problems: &m.problems, tx: inTx != nil}
	ctx := withGuarded(r.Context(), g)
	do := inTx
	if do == nil {
		do = once.DoOutcome[storedResponse]
	}
	out, err := do(ctx, m.keeper.Scope(name).With(m.opts...), key, fp,
		func(ctx context.Context) (storedResponse, error) {
			rec = &recorder{rw: w, method: r.Method, allow: m.allow, limit: m.maxStored}
			if panicked = runHandler(next, rec, r.WithContext(ctx)); panicked != nil {
				// The handler may have acted before it panicked: settled
				// as a 500 of unknown outcome, held by default, that
				// tells the core's tracer and observers of the panic.
				return storedResponse{}, m.serverError(http.StatusInternalServerError, panicked)
			}
			rec.finish()
			if rec.status >= 500 {
				return storedResponse{}, m.serverError(rec.status, nil)
			}
			if !m.stores(rec.status, storeChoice(g.choice.Load())) {
				return storedResponse{}, &notStoredError{status: rec.status}
			}
			resp := rec.response()
			resp.fit(m.maxOutcome - envelopeOverhead)
			return resp, nil
		})
	if inTx != nil {
		m.logTxFailure(ctx, out.Status, err)
	}
	if panicked != nil {
		m.answerPanic(w, r, rec, panicked)
		return
	}
	if rec != nil && inTx != nil && !txSettled(out.Status) && !rec.streaming {
		// The handler's writes and its response were committed together
		// or not at all: its retry replays the response or runs it again.
		dropUnsent(w.Header())
		m.problems.write(w, probStoreUnavailable, 1)
		return
	}
	if rec != nil {
		// The handler ran in this request: its client gets the response as
		// written, whatever became of storing it (a 5xx, a lost lease, a
		// store failure after the fact).
		rec.commit()
		return
	}
	if err == nil {
		switch {
		case out.Value.Format != storedFormat || out.Value.Status < 200:
			m.problems.write(w, probResponseUnavailable, 0)
		case out.Value.TooLarge:
			m.problems.writeUnreplayable(w, &out.Value)
		default:
			out.Value.replay(w, r.Method)
		}
		return
	}
	m.writeError(w, err)
}

// serverError is what fn returns for a 5xx response, or a panic p:
// released, or held (wrapped in once.Hold), as OnServerError says.
func (m *Middleware) serverError(status int, p *handlerPanic) error {
	err := &serverError{status: status}
	if p != nil {
		err.panic = &once.PanicError{Value: p.value, Stack: p.stack}
	}
	if m.onServerError(status) == Release {
		return err
	}
	return once.Hold(err)
}

// stores reports whether a response below 500 is stored.
func (m *Middleware) stores(status int, choice storeChoice) bool {
	switch choice {
	case storeSkip:
		return false
	case storeForce:
		return true
	}
	return m.storeStatus(status)
}

// writeError answers a call that did not run the handler and has no
// stored response to replay.
func (m *Middleware) writeError(w http.ResponseWriter, err error) {
	var inProgress *once.InProgressError
	switch {
	case errors.As(err, &inProgress):
		kind, retryAfter := inProgressProblem(inProgress)
		m.problems.write(w, kind, retryAfter)
	case errors.Is(err, once.ErrKeyReused):
		m.problems.write(w, probKeyReused, 0)
	case errors.As(err, new(*once.OutcomeTooLargeError)), errors.Is(err, once.ErrUndecodable):
		m.problems.write(w, probResponseUnavailable, 0)
	case errors.As(err, new(*once.StoreError)),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		m.problems.write(w, probStoreUnavailable, 1)
	default:
		// An invalid scope name, or a stored outcome that is not an HTTP
		// response (another writer used this scope and key).
		m.problems.write(w, probInternal, 0)
	}
}

// inProgressProblem returns the 409 that answers e and its Retry-After (0:
// none): for a running claim, request-in-progress with the core's hint
// (InProgressError.RetryAfter: the owner's lease left, capped at one
// second, since the owner usually answers sooner; a duplicate that comes
// back too early is told to wait again); for a held key,
// request-outcome-unknown with the hold left, when the key can next be
// claimed, and none for a key held until resolved, which no wait ends.
func inProgressProblem(e *once.InProgressError) (problemKind, int) {
	switch {
	case e.Held && (backends.HeldInfo{Remaining: e.HoldRemaining}).Unbounded():
		return probOutcomeUnknown, 0
	case e.Held:
		return probOutcomeUnknown, retryAfterSeconds(e.RetryAfter)
	}
	return probInProgress, retryAfterSeconds(e.RetryAfter)
}

// retryAfterSeconds rounds d up to whole seconds, at least 1, without
// overflow for a lease of any length.
func retryAfterSeconds(d time.Duration) int {
	s := d / time.Second
	if d%time.Second > 0 {
		s++
	}
	return max(int(s), 1)
}

// serverError is what fn returns for a 5xx response: retryable (released)
// or, wrapped in once.Hold, held. For a handler's panic, it wraps the
// panic as a *once.PanicError, so that the core traces the call as
// panicked (Panicked on the tracer's once.EventDoEnd); its text and code, which a
// held record keeps, are those of the 500 all the same.
type serverError struct {
	status int
	panic  *once.PanicError
}

func (e *serverError) Error() string {
	return "oncehttp: handler answered " + strconv.Itoa(e.status)
}

// ErrorCode is the held record's code: none, whatever the panic value's
// (errors.As finds this one first).
func (e *serverError) ErrorCode() string { return "" }

// Unwrap returns the handler's panic, if any.
func (e *serverError) Unwrap() error {
	if e.panic == nil {
		return nil
	}
	return e.panic
}

// notStoredError is what fn returns for a response that is not stored
// (StoreStatus, SkipStore): retryable, so the key is released.
type notStoredError struct{ status int }

func (e *notStoredError) Error() string {
	return "oncehttp: response " + strconv.Itoa(e.status) + " not stored"
}

// validFieldName reports whether s is an RFC 9110 token.
func validFieldName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c < 0x80 && c > 0x20 && !isSeparator(c):
		default:
			return false
		}
	}
	return true
}

func isSeparator(c byte) bool {
	switch c {
	case '(', ')', '<', '>', '@', ',', ';', ':', '\\', '"', '/', '[', ']', '?', '=', '{', '}', 0x7f:
		return true
	}
	return false
}
