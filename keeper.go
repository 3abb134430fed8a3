package once

import (
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/memory"
)

// Keeper binds a store to a policy. It is safe for concurrent use; make one
// per store and share it.
type Keeper struct {
	store backends.Store
	cfg   config
}

// New returns a Keeper over store. A nil store means a new in-memory store
// (package backends/memory), which guards one process only.
func New(store backends.Store, opts ...Option) *Keeper {
	if store == nil {
		store = memory.New(nil)
	}
	k := &Keeper{store: store, cfg: defaultConfig()}
	for _, o := range opts {
		if o != nil {
			o(&k.cfg)
		}
	}
	return k
}

// Scope returns the scope named name: the namespace of keys of one caller,
// consumer group or job. Keys in different scopes never collide. The name is
// validated by each call that uses the scope. The Scope of a nil Keeper is
// the zero Scope, which every call rejects with an *InvalidInputError.
func (k *Keeper) Scope(name string) Scope {
	if k == nil {
		return Scope{name: name}
	}
	return Scope{name: name, store: k.store, cfg: &k.cfg}
}

// Store returns the store k was made over, for machinery beside the core
// that makes store calls of its own (listing held keys, for one). The
// Store of a nil Keeper is nil.
func (k *Keeper) Store() backends.Store {
	if k == nil {
		return nil
	}
	return k.store
}

// WithStore returns a Keeper with k's policy (its options) over store,
// typically a decorator of k.Store() that changes some of its calls. A nil
// store means k's.
func (k *Keeper) WithStore(store backends.Store) *Keeper {
	if k == nil || store == nil {
		return k
	}
	return &Keeper{store: store, cfg: k.cfg}
}

// Scope is a small value that carries a store, a policy and a scope name,
// so that one Keeper serves calls of every result type. The zero Scope is
// invalid: calls with it return an *InvalidInputError.
type Scope struct {
	name  string
	store backends.Store
	cfg   *config
	inTx  bool // store is bound to a transaction (DoTx)
}

// Name returns the scope's name.
func (s Scope) Name() string { return s.name }

// With returns a copy of s whose calls apply opts on top of s's policy, for
// per-call retention, lease or wait.
func (s Scope) With(opts ...Option) Scope {
	if s.cfg == nil || len(opts) == 0 {
		return s
	}
	cfg := *s.cfg
	cfg.errorTypes = append([]errorType(nil), cfg.errorTypes...)
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	s.cfg = &cfg
	return s
}

// bound returns a copy of s whose calls run on store, bound to a
// transaction (DoTx), keeping s's name and policy but no local cache. The
// core never renews a lease on such a store: a claim made inside a
// transaction is invisible to other sessions until it commits, so there is
// no lease to keep alive (duplicates wait on the store's row lock), and a
// transaction must not be used from a renewal's goroutine.
func (s Scope) bound(store backends.Store) Scope {
	s.store = store
	s.inTx = true
	return s
}
