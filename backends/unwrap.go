package backends

// As finds the first store in store's chain that implements T, an
// optional interface (Watcher, Lister, Admin, …), and returns it. The chain
// is store, then, while the store in hand is a decorator of another (it
// has a method Unwrap() Store, as a localcache store has), the store it
// wraps. The core finds a store's optional interfaces with As, so that a
// decorator need only implement what it changes.
func As[T any](store Store) (T, bool) {
	for store != nil {
		if t, ok := store.(T); ok {
			return t, true
		}
		u, ok := store.(interface{ Unwrap() Store })
		if !ok {
			break
		}
		store = u.Unwrap()
	}
	var zero T
	return zero, false
}
